import { sql, type Kysely } from 'kysely';

/**
 * Rules on the arguments of an inbox's calls (`argument_rules`, as an action rule's), and the rules an
 * email's action was created with (it has no rule to read them from, as with its approval modes; null
 * for a webhook's action, whose rule says).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table email_inbox_agents add column argument_rules jsonb not null default '[]';
    alter table actions add column argument_rules jsonb;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table actions drop column argument_rules;
    alter table email_inbox_agents drop column argument_rules;
  `.execute(db);
}
