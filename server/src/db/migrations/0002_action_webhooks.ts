import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table agents (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      instructions text not null default '',
      model text,
      tools jsonb not null default '[]',
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index agents_org_idx on agents (org_id, created_at desc);

    create table action_rules (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      agent_id uuid references agents (id) on delete set null,
      instructions text not null default '',
      enabled boolean not null default true,
      approval_rules jsonb not null default '{}',
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index action_rules_org_idx on action_rules (org_id, created_at desc);

    create table webhooks (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      identifier text not null unique,
      action_rule_id uuid references action_rules (id) on delete set null,
      agent_id uuid references agents (id) on delete set null,
      run_as_user_id uuid references users (id) on delete set null,
      event_filter jsonb not null default '[]',
      verification_scheme text not null check (verification_scheme in ('wh', 'hmac_sha256', 'shared_token', 'none')),
      secret_encrypted text not null,
      previous_secret_encrypted text,
      previous_secret_expires_at timestamptz(3),
      rate_limit_per_minute integer not null default 100 check (rate_limit_per_minute between 1 and 1000),
      allow_request_overrides boolean not null default false,
      enabled boolean not null default true,
      allowed_origins jsonb not null default '[]',
      blocked_ips jsonb not null default '[]',
      max_payload_bytes integer not null default 262144,
      schedule jsonb,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index webhooks_org_idx on webhooks (org_id, created_at desc);

    create table actions (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      webhook_id uuid references webhooks (id) on delete set null,
      delivery_id uuid not null,
      agent_id uuid references agents (id) on delete set null,
      action_rule_id uuid references action_rules (id) on delete set null,
      run_as_user_id uuid references users (id) on delete set null,
      status text not null,
      approval_state text not null default 'none',
      event_type text not null,
      external_id text,
      instructions text,
      data jsonb not null default '{}',
      tool_approvals jsonb not null default '{}',
      result jsonb,
      error text,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    -- Idempotency: one action per externalId and webhook, enforced by the database under concurrency.
    create unique index actions_webhook_external_id_key on actions (webhook_id, external_id) where external_id is not null;
    create index actions_org_idx on actions (org_id, created_at desc);

    create table action_events (
      id uuid primary key,
      action_id uuid not null references actions (id) on delete cascade,
      org_id uuid not null,
      status text not null,
      cause text not null,
      data jsonb,
      created_at timestamptz(3) not null default now()
    );
    create index action_events_action_idx on action_events (action_id, created_at);

    create table webhook_deliveries (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      webhook_id uuid references webhooks (id) on delete set null,
      action_id uuid references actions (id) on delete set null,
      status text not null check (status in ('accepted', 'buffered', 'skipped', 'failed', 'dead_lettered')),
      reason text,
      replayable boolean not null default true,
      event_type text,
      external_id text,
      payload jsonb,
      raw_body text,
      headers jsonb not null default '{}',
      verification_scheme text not null,
      source_ip text,
      message_id text,
      attempts integer not null default 1,
      next_attempt_at timestamptz(3),
      last_error text,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index webhook_deliveries_org_idx on webhook_deliveries (org_id, created_at desc, id desc);
    create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'buffered';

    -- wh-ids seen within the timestamp tolerance, for replay protection; purged after it.
    create table webhook_message_ids (
      webhook_id uuid not null,
      message_id text not null,
      received_at timestamptz(3) not null default now(),
      primary key (webhook_id, message_id)
    );
  `.execute(db);
}
