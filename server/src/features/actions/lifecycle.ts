import { randomUUID } from 'node:crypto';
import { sql, type Insertable, type Kysely } from 'kysely';
// The one sideways import between features: a transition writes its callbacks' outbox rows in its
// own statement (callbacks never import actions).
import { CALLBACK_EVENT_OF, callbackDetails, outboxCte } from '../callbacks/outbox.ts';
import type { ActionStatus, DB, ThreadMessagesTable } from '../../db/schema.ts';

/**
 * The action lifecycle: the only transitions there are. `running -> rejected | expired`
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
const APPROVAL_STATE: Partial<Record<ActionStatus, string>> = {
  pending_approval: 'pending',
  approved: 'approved',
  rejected: 'rejected',
  expired: 'expired',
};

export interface Transition {
  actionId: string;
  from: ActionStatus;
  to: ActionStatus;
  /** Why, in words an operator reads in the ledger. */
  cause: string;
  data?: Record<string, unknown>;
  /** Other columns changed with the status (result, error, lease). */
  changes?: { result?: string | null; error?: string | null; leaseExpiresAt?: Date | null };
  /** A conversation message stored with the transition (the agent's last word). */
  message?: Insertable<ThreadMessagesTable>;
}

export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError';
}

/**
 * Moves an action from `from` to `to`, records the lifecycle event and writes the callbacks that
 * announce it (the outbox), in one statement: so it needs no transaction of its own, and inside the
 * caller's it commits with it; a transition is never announced without happening, nor the reverse.
 * `moved` is false when the action is no longer in `from` (someone else moved it first). When it
 * wrote `callbacks`, the caller signals BUS_TOPICS.callbacks once it has committed, so that they go out
 * now, not at the next poll.
 */
export async function transition(db: Kysely<DB>, step: Transition): Promise<{ moved: boolean; callbacks: number }> {
  if (!canTransition(step.from, step.to)) throw new IllegalTransitionError(`An action cannot go from ${step.from} to ${step.to}`);
  const changes = step.changes ?? {};
  const approvalState = APPROVAL_STATE[step.to];
  const sets = [sql`status = ${step.to}`, sql`updated_at = now()`];
  if (approvalState) sets.push(sql`approval_state = ${approvalState}`);
  if (changes.result !== undefined) sets.push(sql`result = ${changes.result}::jsonb`);
  if (changes.error !== undefined) sets.push(sql`error = ${changes.error}`);
  if (changes.leaseExpiresAt !== undefined) sets.push(sql`lease_expires_at = ${changes.leaseExpiresAt}`);
  const ctes = [];
  // The message that ends a run is stored in the same statement as the transition it causes.
  if (step.message) {
    const m = step.message;
    ctes.push(
      sql`message as (insert into thread_messages (id, thread_id, seq, role, content, action_id) values (${m.id}, ${m.threadId}, ${m.seq}, ${m.role}, ${m.content}::jsonb, ${m.actionId ?? null}))`,
    );
  }
  ctes.push(sql`moved as (
    update actions set ${sql.join(sets)} where id = ${step.actionId} and status = ${step.from}
    returning id, org_id, webhook_id, delivery_id, external_id, event_type)`);
  ctes.push(sql`recorded as (
    insert into action_events (id, action_id, org_id, status, cause, data)
    select ${randomUUID()}::uuid, id, org_id, ${step.to}, ${step.cause}, ${step.data ? JSON.stringify(step.data) : null}::jsonb from moved
    returning action_id)`);
  const event = CALLBACK_EVENT_OF[step.to];
  if (event) ctes.push(outboxCte(event, step.to, callbackDetails(step.to, step.data, changes)));
  const result = await sql<{ moved: number; callbacks: number }>`with ${sql.join(ctes)}
    select (select count(*) from recorded)::int as moved, ${event ? sql`(select count(*) from callbacks)::int` : sql`0`} as callbacks`.execute(
    db,
  );
  const row = result.rows[0];
  return { moved: (row?.moved ?? 0) > 0, callbacks: row?.callbacks ?? 0 };
}

const CLAIMABLE: readonly ActionStatus[] = ['queued', 'approved'];
if (!CLAIMABLE.every((from) => canTransition(from, 'running'))) throw new IllegalTransitionError('claimForRun must follow the lifecycle');

/**
 * Takes an action for a runner, in one statement: queued or approved -> running (recorded), or a
 * running action whose runner's lease has lapsed (it died), taken over without a new event. Leases are
 * on the database's clock, so processes on different machines agree. Returns the status it had, or
 * undefined when the action is not for taking.
 */
export async function claimForRun(db: Kysely<DB>, actionId: string, leaseMs: number): Promise<ActionStatus | undefined> {
  const result = await sql<{ previous: ActionStatus }>`
    with previous as (
      select id, status, lease_expires_at from actions where id = ${actionId} for update
    ), claimed as (
      update actions a set status = 'running', lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now()
      from previous p
      where a.id = p.id and (p.status in ('queued', 'approved') or (p.status = 'running' and (p.lease_expires_at is null or p.lease_expires_at <= now())))
      returning a.id, a.org_id, p.status as previous
    ), recorded as (
      insert into action_events (id, action_id, org_id, status, cause)
      select ${randomUUID()}::uuid, id, org_id, 'running', case previous when 'queued' then 'picked up by a worker' else 'resumed after approval' end
      from claimed where previous <> 'running'
    )
    select previous from claimed`.execute(db);
  return result.rows[0]?.previous;
}
