import { sql, type Kysely } from 'kysely';

/**
 * How an inbox's approvers are told that one of its actions waits (`notify`, as an action rule's), and
 * the channels an email's action was created with (it has no rule to read them from; null for a
 * webhook's action, whose rule says).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table email_inbox_agents add column notify jsonb not null default '[]';
    alter table actions add column notify jsonb;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table actions drop column notify;
    alter table email_inbox_agents drop column notify;
  `.execute(db);
}
