import { sql, type Kysely } from 'kysely';

/**
 * Who decides an inbox's calls, as an action rule says it of its own: `approvers` (null: the org's
 * admins) and how many of them must approve (`min_approvals`, 1 to 5). An email's action reads them from
 * its inbox's assignment of its agent while it waits, as a webhook's action reads its rule's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table email_inbox_agents add column approvers jsonb;
    alter table email_inbox_agents add column min_approvals integer not null default 1
      check (min_approvals between 1 and 5);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table email_inbox_agents drop column min_approvals;
    alter table email_inbox_agents drop column approvers;
  `.execute(db);
}
