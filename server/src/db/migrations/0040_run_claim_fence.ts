import { sql, type Kysely } from 'kysely';

/**
 * Raises 'AP001' for a run's write whose claim is no longer the action's (another claim's token is on
 * it): the whole statement is refused, so that a runner that stalled past its lease stores nothing and
 * sends no request that may not be repeated (that call's start is such a write). Called from
 * writeActions's fence, for the rows that fail it; volatile, so that the statement evaluates it there.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create function run_claim_lost(p_action_id uuid) returns boolean language plpgsql volatile as $$
    begin
      raise exception 'another runner claimed action % since this run did', p_action_id using errcode = 'AP001';
    end $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function run_claim_lost(uuid)`.execute(db);
}
