import { sql, type Kysely } from 'kysely';

/** A call approved with edits keeps the model's arguments (input) and the ones a person approved, which it runs with. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table tool_calls add column approved_input jsonb;`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table tool_calls drop column approved_input;`.execute(db);
}
