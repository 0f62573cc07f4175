import { sql, type Kysely } from 'kysely';
import { commitWithoutFlush } from '../../db/flushless-commit.ts';
import type { ActionStatus, DB } from '../../db/schema.ts';

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
/** A call sent back with guidance moves the action on as `approved`, but nobody approved it: the ledger says `sent_back`. */
export const approvalStateOf = (step: Pick<Transition, 'to' | 'data'>): string | undefined =>
  step.to === 'approved' && step.data?.kind === 'send_back' ? 'sent_back' : APPROVAL_STATE[step.to];

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

const CLAIMABLE: readonly ActionStatus[] = ['queued', 'approved'];
if (!CLAIMABLE.every((from) => canTransition(from, 'running')))
  throw new IllegalTransitionError('claimRunnable must follow the lifecycle');

/**
 * Takes up to `limit` actions for this process's runners, in one statement: queued or approved ones,
 * oldest first (-> running, recorded), and running ones whose runner's lease lapsed (it died) or was
 * given up (its process stopped), taken over without a new event. Rows another process is taking are
 * skipped, not waited for. Leases are on the database's clock, so processes on different machines
 * agree. The actions table is the run queue: no job is written, fetched or completed per action. It
 * commits without waiting for the flush: a claim a crash of the database loses is an action taken
 * again, as when its runner dies.
 */
export async function claimRunnable(db: Kysely<DB>, limit: number, leaseMs: number): Promise<ClaimedRun[]> {
  // Prepared (db/prepared.ts: planned again as the table grows). The taken rows are updated by their keys
  // (`= any`), so that a generic plan is index scans, never a join that scans the table. Lapsed and
  // given-up leases are two plain index scans, not one bitmap scan of `is null or <= now()`: the running
  // index keeps an entry for every lease a runner renewed, and only a plain scan marks the dead ones
  // it passes, so that the next claim skips them (a bitmap scan read every such row's page, every claim).
  // `for no key update`, the lock its update takes anyway: `for update` also skipped a row that another
  // transaction was inserting a reference to (its foreign-key check holds `for key share` on the action:
  // an approval email's record, a ledger event), and that action then waited for the poll.
  const result = await sql<ClaimedRun>`
    with fresh as (
      select id, status, lease_expires_at from actions where status in ('queued', 'approved')
        order by updated_at limit ${limit} for no key update skip locked
    ), lapsed as (
      select id, status, lease_expires_at from actions where status = 'running' and lease_expires_at <= now()
        order by lease_expires_at limit ${limit} for no key update skip locked
    ), given_up as (
      select id, status, lease_expires_at from actions where status = 'running' and lease_expires_at is null
        limit ${limit} for no key update skip locked
    ), taken as (
      select * from (select * from fresh union all select * from lapsed union all select * from given_up) t limit ${limit}
    ), claimed as (
      update actions a set status = 'running', lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond',
        updated_at = now(), run_token = gen_random_uuid(),
        -- a lapsed lease is a runner that died; one given up (null) was a process stopping cleanly
        takeovers = a.takeovers + (t.status = 'running' and t.lease_expires_at is not null)::int
      from taken t where a.id = any(array(select id from taken)) and a.id = t.id
      returning a.id, a.org_id, a.run_token, t.status as previous
    ), recorded as (
      insert into action_events (id, action_id, org_id, status, cause)
      select gen_random_uuid(), id, org_id, 'running', case previous when 'queued' then 'picked up by a worker'
        else 'resumed after approval' end
      from claimed where previous <> 'running'
    )
    select id, run_token from claimed where ${commitWithoutFlush}`.execute(db);
  return result.rows;
}

/** An action claimed for a run, with the token that the claim gave it (its runner's, until another claim). */
export interface ClaimedRun {
  id: string;
  runToken: string;
}
