import { sql, type Kysely } from 'kysely';

/**
 * Each claim of an action for a run gives it a new token, which its runner keeps and renews its lease
 * by: a runner whose lease renewal or write finds another claim's token stops (another runner took the
 * action over); a write conflict under its own token is the run's to resolve (action-runner.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table actions add column run_token uuid`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table actions drop column run_token`.execute(db);
}
