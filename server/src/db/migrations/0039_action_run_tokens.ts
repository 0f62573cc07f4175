import { sql, type Kysely } from 'kysely';

/**
 * Each claim of an action for a run gives it a new token, which its runner keeps: a runner whose write
 * conflicts tells its own conflict (a fault of the run: it fails the action) from another runner's
 * having taken the action over (it stops) by whether the action still carries its token.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table actions add column run_token uuid`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table actions drop column run_token`.execute(db);
}
