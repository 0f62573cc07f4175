import { sql, type Kysely } from 'kysely';

/**
 * How often a run of the action was taken over after its runner died (its lease lapsed). An action
 * whose runs keep killing their process (a tool that exhausts memory, say) is failed after a few
 * takeovers instead of being passed from worker to worker for ever.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table actions add column takeovers int not null default 0`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table actions drop column takeovers`.execute(db);
}
