import { sql, type Kysely } from 'kysely';

/**
 * The dispatcher's claim (`claim_due_callbacks`, migration 0027) with its order check that cannot be
 * planned as a scan. Planned on an empty table (a new deployment's first claims, whose generic plan
 * each connection then keeps), the check "no earlier pending callback of the same action to the same
 * endpoint" became a walk of the whole due index (whose predicate is `status = 'pending'`, as the
 * check's is) for every due row, or a sequential scan: once a backlog formed, each claim read it once
 * per row, and PostgreSQL spent a core on claims while the dispatcher waited (docs/benchmarks.md, the
 * seventy-third session). The check's status test is now written so that the due index cannot serve
 * it, and sequential scans are off within the claim: the check is a probe of its own index
 * (action_id, endpoint_id, seq) however empty the table was when it was planned.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await claimFunction(db, sql`coalesce(e.status = 'pending', false)`, sql`set enable_seqscan = off`);
  // The claim's update fires this trigger within the claim's settings; it keeps the defaults.
  await sql`alter function announce_callbacks() set enable_seqscan from current`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter function announce_callbacks() reset enable_seqscan`.execute(db);
  await claimFunction(db, sql`e.status = 'pending'`, sql``);
}

function claimFunction(db: Kysely<unknown>, earlierPending: ReturnType<typeof sql>, extraSettings: ReturnType<typeof sql>) {
  return sql`
    create or replace function claim_due_callbacks(p_limit int, p_lease_ms int, p_skip uuid[])
    returns table (id uuid, body text, attempt_count int, endpoint_id uuid, url text, secret_encrypted text,
      previous_secret_encrypted text, previous_secret_expires_at timestamptz, trace_parent text, event_type text)
    language plpgsql
    set enable_sort = off set enable_bitmapscan = off set enable_hashjoin = off set jit = off ${extraSettings}
    as $$
    #variable_conflict use_column
    begin
      return query
      with due as (
        select d.id from callback_deliveries d
        join callback_endpoints ep on ep.id = d.endpoint_id and ep.enabled
        where d.status = 'pending' and d.next_attempt_at <= now() and not (d.endpoint_id = any (p_skip))
          and not exists (
            select 1 from callback_deliveries e
            where e.action_id = d.action_id and e.endpoint_id = d.endpoint_id and e.seq < d.seq and ${earlierPending}
          )
        order by d.next_attempt_at
        limit p_limit
        for update of d skip locked
      )
      update callback_deliveries d
      set attempt_count = d.attempt_count + 1, next_attempt_at = now() + p_lease_ms * interval '1 millisecond',
        updated_at = now()
      from due, callback_endpoints ep
      where d.id = due.id and ep.id = d.endpoint_id
      returning d.id, d.payload::text, d.attempt_count, ep.id, ep.url, ep.secret_encrypted, ep.previous_secret_encrypted,
        ep.previous_secret_expires_at::timestamptz, d.trace_parent, d.event_type;
    end $$;
  `.execute(db);
}
