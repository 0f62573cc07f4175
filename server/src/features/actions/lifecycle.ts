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
if (!CLAIMABLE.every((from) => canTransition(from, 'running'))) throw new IllegalTransitionError('claimRunnable must follow the lifecycle');

/**
 * Takes up to `limit` actions for this process's runners, in one statement: queued or approved ones,
 * oldest first (-> running, recorded), and running ones whose runner's lease lapsed (it died) or was
 * given up (its process stopped), taken over without a new event. Rows another process is taking are
 * skipped, not waited for. Leases are on the database's clock, so processes on different machines
 * agree. The actions table is the run queue: no job is written, fetched or completed per action.
 */
export async function claimRunnable(db: Kysely<DB>, limit: number, leaseMs: number): Promise<string[]> {
  const result = await sql<{ id: string }>`
    with fresh as (
      select id, status, lease_expires_at from actions where status in ('queued', 'approved') order by updated_at limit ${limit} for update skip locked
    ), abandoned as (
      select id, status, lease_expires_at from actions
      where status = 'running' and (lease_expires_at is null or lease_expires_at <= now())
      limit ${limit} for update skip locked
    ), taken as (
      select * from (select * from fresh union all select * from abandoned) t limit ${limit}
    ), claimed as (
      update actions a set status = 'running', lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now(),
        -- a lapsed lease is a runner that died; one given up (null) was a process stopping cleanly
        takeovers = a.takeovers + (t.status = 'running' and t.lease_expires_at is not null)::int
      from taken t where a.id = t.id
      returning a.id, a.org_id, t.status as previous
    ), recorded as (
      insert into action_events (id, action_id, org_id, status, cause)
      select gen_random_uuid(), id, org_id, 'running', case previous when 'queued' then 'picked up by a worker' else 'resumed after approval' end
      from claimed where previous <> 'running'
    )
    select id from claimed`.execute(db);
  return result.rows.map((row) => row.id);
}
