import { sql, type Kysely } from 'kysely';

/**
 * Experiments: a candidate version of an agent replayed on past actions. Each selected action is a
 * result row, pending until a replay stores its outcome once (any process claims pending rows under
 * a lease, so an experiment goes on after a restart). Model calls made by a replay are real spend,
 * kept in model_calls with their experiment (and no action).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table experiments (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      agent_id uuid not null,
      version int not null,
      state text not null check (state in ('queued', 'running', 'completed', 'failed', 'cancelled')),
      live_read_only_tools boolean not null default false,
      selection jsonb not null,
      error text,
      created_by_user_id uuid references users (id) on delete set null,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now(),
      started_at timestamptz(3),
      finished_at timestamptz(3),
      foreign key (agent_id, version) references agent_versions (agent_id, version) on delete cascade
    );
    create index experiments_org_idx on experiments (org_id, created_at desc, id desc);
    create index experiments_unfinished_idx on experiments (created_at) where state in ('queued', 'running');

    create table experiment_results (
      experiment_id uuid not null references experiments (id) on delete cascade,
      action_id uuid not null references actions (id) on delete cascade,
      org_id uuid not null references organizations (id) on delete cascade,
      position int not null,
      state text not null default 'pending' check (state in ('pending', 'done')),
      attempts int not null default 0,
      lease_expires_at timestamptz(3),
      outcome text check (outcome in ('same', 'changed', 'failed')),
      baseline jsonb,
      candidate jsonb,
      differences jsonb,
      finished_at timestamptz(3),
      primary key (experiment_id, action_id)
    );
    create index experiment_results_pending_idx on experiment_results (experiment_id, position) where state = 'pending';
    create index experiment_results_page_idx on experiment_results (experiment_id, position);

    alter table model_calls add column experiment_id uuid references experiments (id) on delete set null;
    create index model_calls_experiment_idx on model_calls (experiment_id) where experiment_id is not null;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table model_calls drop column experiment_id;
    drop table experiment_results;
    drop table experiments;
  `.execute(db);
}
