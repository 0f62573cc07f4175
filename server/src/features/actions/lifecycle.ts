import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ActionStatus, DB } from '../../db/schema.ts';

/**
 * The action lifecycle (spec 3.3): the only transitions there are. `running -> rejected | expired`
 * covers a staged call decided in the moment between staging it and pausing the action.
 */
const TRANSITIONS: Readonly<Record<ActionStatus, readonly ActionStatus[]>> = {
  queued: ['running', 'failed'],
  running: ['pending_approval', 'completed', 'failed', 'rejected', 'expired'],
  pending_approval: ['approved', 'rejected', 'expired', 'failed'],
  approved: ['running', 'failed'],
  completed: [],
  failed: [],
  rejected: [],
  expired: [],
};

export const TERMINAL_STATUSES: readonly ActionStatus[] = ['completed', 'failed', 'rejected', 'expired'];

export const canTransition = (from: ActionStatus, to: ActionStatus): boolean => TRANSITIONS[from].includes(to);

/** The approval state an action shows (ledger) once it enters a status; unchanged for the others. */
const APPROVAL_STATE: Partial<Record<ActionStatus, string>> = { pending_approval: 'pending', approved: 'approved', rejected: 'rejected', expired: 'expired' };

export interface Transition {
  actionId: string;
  from: ActionStatus;
  to: ActionStatus;
  /** Why, in words an operator reads in the ledger. */
  cause: string;
  data?: Record<string, unknown>;
  /** Other columns changed with the status (result, error, lease). */
  changes?: { result?: string | null; error?: string | null; leaseExpiresAt?: Date | null };
}

export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError';
}

/**
 * Moves an action from `from` to `to` and records the lifecycle event, in the caller's transaction.
 * Returns false when the action is no longer in `from` (someone else moved it first).
 */
export async function transition(trx: Kysely<DB>, step: Transition): Promise<boolean> {
  if (!canTransition(step.from, step.to)) throw new IllegalTransitionError(`An action cannot go from ${step.from} to ${step.to}`);
  const approvalState = APPROVAL_STATE[step.to];
  const moved = await trx.updateTable('actions')
    .set({ status: step.to, updatedAt: new Date(), ...(approvalState ? { approvalState } : {}), ...step.changes })
    .where('id', '=', step.actionId)
    .where('status', '=', step.from)
    .returning('orgId')
    .executeTakeFirst();
  if (!moved) return false;
  await trx.insertInto('actionEvents').values({
    id: randomUUID(), actionId: step.actionId, orgId: moved.orgId, status: step.to, cause: step.cause, data: step.data ? JSON.stringify(step.data) : null,
  }).execute();
  return true;
}
