import { sql, type Kysely } from 'kysely';

/**
 * How each decision on a tool call was made (the console, the API, and later an email link or a
 * reply), and the attempts to decide that were refused (a call decided already, and later a used
 * link or a reply from the wrong sender), each with its channel, who tried, and why it was refused.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table tool_calls add column decision_channel text
      check (decision_channel in ('console', 'api', 'email_link', 'email_reply'));
    create table approval_attempts (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      tool_call_id uuid not null references tool_calls (id) on delete cascade,
      channel text not null check (channel in ('console', 'api', 'email_link', 'email_reply')),
      user_id uuid references users (id) on delete set null,
      reason text not null,
      created_at timestamptz(3) not null default now()
    );
    create index approval_attempts_call on approval_attempts (tool_call_id, created_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table approval_attempts;
    alter table tool_calls drop column decision_channel;
  `.execute(db);
}
