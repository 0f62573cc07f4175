import { sql, type Kysely } from 'kysely';

/**
 * Usage and budgets: one row per model call (tokens as the provider reported them, duration, cost
 * when the model has a price), the budgets of orgs and agents, and each budget's spend in its
 * current period, which runs take from before each model call (reserved, then settled). The usage
 * rows keep ids without foreign keys (but the org's): the history outlives a deleted agent or user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table organizations add column budget jsonb;
    alter table agents add column budget jsonb;
    create table model_calls (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      action_id uuid,
      agent_id uuid,
      user_id uuid,
      provider text not null,
      model text not null,
      input_tokens integer not null,
      output_tokens integer not null,
      cached_input_tokens integer not null,
      cost_usd double precision,
      duration_ms integer not null,
      created_at timestamptz(3) not null
    );
    create index model_calls_org_time on model_calls (org_id, created_at);
    create index model_calls_action on model_calls (action_id);
    create table budget_spend (
      scope_id uuid not null,
      period_key text not null,
      org_id uuid not null references organizations (id) on delete cascade,
      tokens bigint not null default 0,
      cost_usd double precision not null default 0,
      updated_at timestamptz(3) not null default now(),
      primary key (scope_id, period_key)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table budget_spend;
    drop table model_calls;
    alter table agents drop column budget;
    alter table organizations drop column budget;
  `.execute(db);
}
