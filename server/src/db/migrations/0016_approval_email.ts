import { sql, type Kysely } from 'kysely';

/**
 * Approvals by email: who a rule asks (`approvers`, null: the org's admins) and how (`notify`), each
 * user's opt-out, the notifications sent per call and approver, the one-time decision links (only
 * their SHA-256 is kept), and what the provider said of a received email's SPF/DKIM/DMARC.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table action_rules add column approvers jsonb;
    alter table action_rules add column notify jsonb not null default '[]';
    alter table users add column approval_emails boolean not null default true;
    alter table email_messages add column authentication jsonb;
    create table approval_notifications (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      action_id uuid not null references actions (id) on delete cascade,
      tool_call_id uuid not null references tool_calls (id) on delete cascade,
      user_id uuid references users (id) on delete set null,
      channel text not null check (channel in ('email')),
      address text,
      status text not null check (status in ('sending', 'sent', 'not_sent', 'failed')),
      reason text,
      email_message_id uuid references email_messages (id) on delete set null,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create unique index approval_notifications_once on approval_notifications (tool_call_id, user_id, channel);
    create index approval_notifications_action on approval_notifications (action_id);
    create index approval_notifications_message on approval_notifications (email_message_id);
    create table approval_links (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      tool_call_id uuid not null references tool_calls (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      notification_id uuid not null references approval_notifications (id) on delete cascade,
      decision text not null check (decision in ('approve', 'reject')),
      token_hash text not null unique,
      expires_at timestamptz(3) not null,
      used_at timestamptz(3),
      created_at timestamptz(3) not null default now()
    );
    create index approval_links_call on approval_links (tool_call_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table approval_links;
    drop table approval_notifications;
    alter table email_messages drop column authentication;
    alter table users drop column approval_emails;
    alter table action_rules drop column notify;
    alter table action_rules drop column approvers;
  `.execute(db);
}
