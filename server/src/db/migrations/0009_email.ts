import { sql, type Kysely } from 'kysely';

/**
 * The email side. An org's integration with the `mail` provider: its API key and webhook signing
 * secret, encrypted (only hints are ever shown), the default sender, and what was last learnt of the
 * sender's domain. Inboxes: addresses that receive, each unique across all orgs (an inbound message
 * finds its org by its recipient), with the agents assigned to answer them (one primary at most).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table email_integrations (
      org_id uuid primary key references organizations (id) on delete cascade,
      api_key_encrypted text not null,
      api_key_hint text not null,
      webhook_secret_encrypted text not null,
      webhook_secret_hint text not null,
      from_email text not null,
      from_name text,
      domain_status text,
      domain_receiving boolean,
      domain_checked_at timestamptz(3),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );

    create table email_inboxes (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      email_address text not null unique,
      display_name text not null,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index email_inboxes_org on email_inboxes (org_id, created_at desc, id desc);

    create table email_inbox_agents (
      inbox_id uuid not null references email_inboxes (id) on delete cascade,
      agent_id uuid not null references agents (id) on delete cascade,
      org_id uuid not null references organizations (id) on delete cascade,
      is_primary boolean not null,
      auto_respond boolean not null,
      approval_rules jsonb,
      assigned_by_user_id uuid references users (id) on delete set null,
      created_at timestamptz(3) not null default now(),
      primary key (inbox_id, agent_id)
    );
    create unique index email_inbox_agents_one_primary on email_inbox_agents (inbox_id) where is_primary;
  `.execute(db);
}
