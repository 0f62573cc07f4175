import { sql, type Kysely } from 'kysely';

/**
 * The dispatcher's claim commits without waiting for its WAL to reach the disk (synchronous_commit off,
 * for the claim's transaction only). What a crash of the database could lose is a claim whose attempt
 * was not recorded yet: that callback is sent again, as it is when the dispatcher dies mid-attempt. A
 * recorded attempt is durable, and with it the claim before it (the WAL is flushed in order). The
 * claim then stops waiting for a flush (about 0.2 ms on this machine's disk, more under load) before
 * the POST can start.
 */
/** 0027's claim, with or without the commit that does not wait for the flush. */
const claimFunction = (flushless: boolean) => sql`
    create or replace function claim_due_callbacks(p_limit int, p_lease_ms int, p_skip uuid[])
    returns table (id uuid, body text, attempt_count int, endpoint_id uuid, url text, secret_encrypted text,
      previous_secret_encrypted text, previous_secret_expires_at timestamptz, trace_parent text, event_type text)
    language plpgsql
    set enable_sort = off set enable_bitmapscan = off set enable_hashjoin = off set jit = off
    as $$
    #variable_conflict use_column
    begin
      ${sql.raw(
        flushless
          ? "-- Local to the transaction (not one of the function's own settings, so it holds until the commit).\n" +
              "      perform set_config('synchronous_commit', 'off', true);"
          : '',
      )}
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
    end $$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await claimFunction(true).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await claimFunction(false).execute(db);
}
