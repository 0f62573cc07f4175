import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- A customer's receiver of lifecycle callbacks for the actions of one action webhook.
    create table callback_endpoints (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      webhook_id uuid not null references webhooks (id) on delete cascade,
      url text not null,
      description text not null default '',
      events jsonb not null,
      enabled boolean not null default true,
      disabled_reason text,
      disabled_at timestamptz(3),
      secret_encrypted text not null,
      previous_secret_encrypted text,
      previous_secret_expires_at timestamptz(3),
      -- Set by the first failed attempt after a success; an endpoint failing for 5 days is disabled.
      failing_since timestamptz(3),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index callback_endpoints_org_idx on callback_endpoints (org_id, webhook_id, created_at desc);
    create index callback_endpoints_webhook_idx on callback_endpoints (webhook_id) where enabled;

    -- The outbox: one row per (transition, endpoint), written with the transition. seq orders the
    -- callbacks of one action; webhook-id is the row's id, the same on every attempt.
    create table callback_deliveries (
      id uuid primary key,
      seq bigint generated always as identity,
      org_id uuid not null references organizations (id) on delete cascade,
      endpoint_id uuid not null references callback_endpoints (id) on delete cascade,
      action_id uuid not null references actions (id) on delete cascade,
      event_type text not null,
      payload jsonb not null,
      status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed', 'dead_lettered')),
      -- Attempts in the current round: a replay or recover starts a new round of the schedule.
      attempt_count integer not null default 0,
      -- When pending: the next attempt is due. While an attempt is in flight, the end of its lease
      -- (if its dispatcher dies, another retries once it lapses); out of the due range meanwhile.
      next_attempt_at timestamptz(3) not null default now(),
      last_attempt_at timestamptz(3),
      last_status_code integer,
      last_error text,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    create index callback_deliveries_due_idx on callback_deliveries (next_attempt_at) where status = 'pending';
    -- The ledger's callbacks of an action, and the order check (an action has a handful of rows).
    create index callback_deliveries_action_idx on callback_deliveries (action_id, seq);
    create index callback_deliveries_endpoint_idx on callback_deliveries (endpoint_id, created_at);

    create table callback_attempts (
      id uuid primary key,
      delivery_id uuid not null references callback_deliveries (id) on delete cascade,
      attempted_at timestamptz(3) not null,
      duration_ms integer not null,
      status_code integer,
      error text,
      response_body text
    );
    create index callback_attempts_delivery_idx on callback_attempts (delivery_id, attempted_at);
  `.execute(db);
}
