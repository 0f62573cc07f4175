import { sql, type Kysely } from 'kysely';

/**
 * The dispatcher's claim as a function, so that its plan is fixed: walk the due index in time order
 * and stop at the limit. Planned freely, PostgreSQL counted on few due callbacks whenever its
 * statistics were missing or old (a new database, autovacuum off or behind) and read every due row,
 * checked each one's order and sorted them all, for each claim of a few hundred: a backlog made every
 * claim slower, which made the backlog grow (bench:callbacks either kept up or queued for seconds;
 * docs/benchmarks.md). The function's own settings leave only the index walk and key lookups (and
 * no JIT, which a disabled plan's cost would otherwise call for).
 *
 * The order check (no earlier pending callback of the same action to the same endpoint) is one probe
 * of (action_id, endpoint_id, seq); the ledger's callbacks of an action still read by action_id.
 * Columns of callback_deliveries or callback_endpoints that the dispatcher needs are added here too.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create index callback_deliveries_order_idx on callback_deliveries (action_id, endpoint_id, seq);
    drop index callback_deliveries_action_idx;

    -- Takes up to p_limit due callbacks (skipping p_skip's endpoints), leasing each for p_lease_ms
    -- (next_attempt_at moves to the lease's end) and counting the attempt.
    create function claim_due_callbacks(p_limit int, p_lease_ms int, p_skip uuid[])
    returns table (id uuid, body text, attempt_count int, endpoint_id uuid, url text, secret_encrypted text,
      previous_secret_encrypted text, previous_secret_expires_at timestamptz, trace_parent text, event_type text)
    language plpgsql
    set enable_sort = off set enable_bitmapscan = off set enable_hashjoin = off set jit = off
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
            where e.action_id = d.action_id and e.endpoint_id = d.endpoint_id and e.seq < d.seq and e.status = 'pending'
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
    -- The claim's update fires this trigger within the claim's settings; it keeps the defaults (and
    -- so plans of its own, cached per session whichever statement fired it first).
    alter function announce_callbacks() set enable_sort from current set enable_bitmapscan from current
      set enable_hashjoin from current set jit from current;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter function announce_callbacks() reset all;
    drop function claim_due_callbacks(int, int, uuid[]);
    create index callback_deliveries_action_idx on callback_deliveries (action_id, seq);
    drop index callback_deliveries_order_idx;
  `.execute(db);
}
