import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table agents add column provider text check (provider in ('openai-compatible', 'openai', 'anthropic'));
    alter table action_rules add column approval_timeout_seconds integer not null default 86400
      check (approval_timeout_seconds between 1 and 2592000);

    -- An org's own model provider keys (encrypted); the environment's are the fallback.
    create table org_model_credentials (
      org_id uuid not null references organizations (id) on delete cascade,
      provider text not null check (provider in ('openai-compatible', 'openai', 'anthropic')),
      api_key_encrypted text not null,
      api_key_hint text not null,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now(),
      primary key (org_id, provider)
    );

    alter table actions add column thread_id uuid references threads (id) on delete set null;
    -- Whoever runs the action holds it until this time and renews it while running; an expired
    -- lease on a running action means its process died, and another may resume it.
    alter table actions add column lease_expires_at timestamptz(3);
    create index actions_running_lease_idx on actions (lease_expires_at) where status = 'running';

    create table thread_messages (
      id uuid primary key,
      thread_id uuid not null references threads (id) on delete cascade,
      seq integer not null,
      role text not null check (role in ('user', 'assistant', 'tool')),
      content jsonb not null,
      action_id uuid references actions (id) on delete set null,
      created_at timestamptz(3) not null default now(),
      unique (thread_id, seq)
    );

    create table tool_calls (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      action_id uuid not null references actions (id) on delete cascade,
      tool_call_id text not null,
      tool_name text not null,
      input jsonb,
      mode text not null check (mode in ('allow', 'ask', 'agent', 'deny')),
      status text not null check (status in ('ready', 'staged', 'completed', 'failed', 'denied', 'rejected', 'expired', 'cancelled')),
      approval text not null check (approval in ('not_required', 'pending', 'approved', 'rejected', 'expired', 'cancelled')),
      output jsonb,
      requested_at timestamptz(3) not null default now(),
      expires_at timestamptz(3),
      decided_by_user_id uuid references users (id) on delete set null,
      decided_at timestamptz(3),
      decision_reason text,
      completed_at timestamptz(3),
      unique (action_id, tool_call_id)
    );
    create index tool_calls_org_approval_idx on tool_calls (org_id, approval, requested_at desc, id desc);

    create table user_tool_preferences (
      user_id uuid not null references users (id) on delete cascade,
      tool_name text not null,
      preference text not null check (preference in ('always_deny')),
      updated_at timestamptz(3) not null default now(),
      primary key (user_id, tool_name)
    );

    -- A document made by a tool call is made once, even when the call is run again after a crash.
    alter table documents add column tool_call_id text;
    create unique index documents_tool_call_key on documents (action_id, tool_call_id) where tool_call_id is not null;
  `.execute(db);
}
