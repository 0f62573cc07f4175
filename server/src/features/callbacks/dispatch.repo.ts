import { sql, type Kysely } from 'kysely';
import { commitWithoutFlush } from '../../db/flushless-commit.ts';
import type { CallbackDeliveryStatus, DB } from '../../db/schema.ts';

export interface ClaimedCallback {
  id: string;
  /** The body to send, as text: signed and sent byte for byte. */
  body: string;
  attemptCount: number;
  endpointId: string;
  url: string;
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretExpiresAt: Date | null;
  /** The action's trace, which the attempt's span joins. */
  traceParent: string | null;
  eventType: string;
}

export interface AttemptRecord {
  deliveryId: string;
  endpointId: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
  status: CallbackDeliveryStatus;
  delayMs: number | null;
}

/** How long a claimed delivery is ours before another dispatcher may take it (we died mid-attempt). */
export const claimLeaseMs = (timeoutMs: number) => timeoutMs + 15_000;

export const dispatchRepo = {
  /**
   * Takes up to `limit` due deliveries, leasing each (next_attempt_at moves to the lease's end) and
   * counting the attempt. A delivery is due only when no earlier callback of the same action to the
   * same endpoint is still pending: that is what keeps each action's callbacks in lifecycle order,
   * also across dispatcher processes (the earlier row is either locked by its claimer, or committed).
   * `skipEndpoints` are endpoints this dispatcher already has enough attempts in flight to. The
   * statement is the function `claim_due_callbacks` (migration 0027), whose plan is fixed; it commits
   * without waiting for the flush (a lost claim is a callback sent again, as when a dispatcher dies mid-attempt).
   */
  claimDue: async (db: Kysely<DB>, limit: number, leaseMs: number, skipEndpoints: string[] = []): Promise<ClaimedCallback[]> =>
    (
      await sql<ClaimedCallback>`select * from claim_due_callbacks(${limit}, ${leaseMs}, ${skipEndpoints}::uuid[])
        where ${commitWithoutFlush}`.execute(db)
    ).rows,

  /**
   * Records finished attempts in one statement: the attempt rows, each delivery's new state (a
   * delivery disabled meanwhile keeps its `failed`), and each endpoint's health. Returns the
   * endpoints that have now been failing for `disableAfterMs` (to be disabled). Rows are found by
   * their keys (`= any`), and the status test is written so that it cannot match the due index:
   * otherwise, where statistics are missing or old, PostgreSQL read every pending delivery (and every
   * endpoint) for each batch, a hash join or a bitmap AND with the due index whose cost grew with the
   * backlog (docs/benchmarks.md).
   */
  record: async (db: Kysely<DB>, attempts: AttemptRecord[], disableAfterMs: number): Promise<string[]> => {
    const deliveryIds = attempts.map((attempt) => attempt.deliveryId);
    const endpointIds = [...new Set(attempts.map((attempt) => attempt.endpointId))];
    const { rows } = await sql<{ id: string }>`
      with input as (
        select * from jsonb_to_recordset(${JSON.stringify(attempts)}::jsonb) as r(
          "deliveryId" uuid, "endpointId" uuid, "attemptedAt" timestamptz, "durationMs" int, "statusCode" int,
          "error" text, "responseBody" text, "status" text, "delayMs" int)
      ), attempts as (
        insert into callback_attempts (id, delivery_id, attempted_at, duration_ms, status_code, error, response_body)
        select gen_random_uuid(), "deliveryId", "attemptedAt", "durationMs", "statusCode", "error", "responseBody" from input
      ), delivered as (
        update callback_deliveries d
        set status = i.status,
            next_attempt_at = case when i.status = 'pending' then now() + i."delayMs" * interval '1 millisecond'
              else d.next_attempt_at end,
            last_attempt_at = i."attemptedAt", last_status_code = i."statusCode", last_error = i.error, updated_at = now()
        from input i
        where d.id = any (${deliveryIds}::uuid[]) and d.id = i."deliveryId"
          and coalesce(d.status = 'pending', false)
      ), health as (
        select "endpointId" as id, bool_or(status = 'succeeded') as ok from input group by "endpointId"
      ), marked as (
        update callback_endpoints ep set failing_since = case when h.ok then null else now() end
        from health h
        where ep.id = any (${endpointIds}::uuid[]) and ep.id = h.id and (h.ok = (ep.failing_since is not null))
      )
      select ep.id from callback_endpoints ep join health h on h.id = ep.id
      where ep.id = any (${endpointIds}::uuid[]) and not h.ok and ep.enabled
        and ep.failing_since <= now() - ${disableAfterMs}::bigint * interval '1 millisecond'`.execute(db);
    return rows.map((row) => row.id);
  },
};
