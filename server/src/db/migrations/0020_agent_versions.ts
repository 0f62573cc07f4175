import { sql, type Kysely } from 'kysely';

/**
 * An agent's behaviour (instructions, provider, model, tools) becomes immutable numbered versions,
 * one of them live; the agent keeps its identity, name and budget. Each publication is recorded.
 * Every action keeps the version live when it was created, and runs with it. What each agent does
 * today becomes its version 1, live, and every existing action is pinned to it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table agent_versions (
      agent_id uuid not null references agents (id) on delete cascade,
      version int not null check (version > 0),
      org_id uuid not null references organizations (id) on delete cascade,
      instructions text not null,
      provider text check (provider in ('openai-compatible', 'openai', 'anthropic')),
      model text,
      tools jsonb not null,
      change_note text,
      created_by_user_id uuid references users (id) on delete set null,
      created_at timestamptz(3) not null default now(),
      primary key (agent_id, version)
    );
    create table agent_publications (
      id uuid primary key,
      agent_id uuid not null,
      org_id uuid not null references organizations (id) on delete cascade,
      version int not null,
      previous_version int,
      published_by_user_id uuid references users (id) on delete set null,
      published_at timestamptz(3) not null default now(),
      foreign key (agent_id, version) references agent_versions (agent_id, version) on delete cascade
    );
    create index agent_publications_agent_idx on agent_publications (agent_id, published_at desc, id desc);

    alter table agents add column live_version int not null default 1;
    insert into agent_versions (agent_id, version, org_id, instructions, provider, model, tools, created_at)
      select id, 1, org_id, instructions, provider, model, tools, created_at from agents;
    insert into agent_publications (id, agent_id, org_id, version, published_at)
      select gen_random_uuid(), id, org_id, 1, created_at from agents;
    -- Checked at commit: an agent and its first version are written in one transaction.
    alter table agents add constraint agents_live_version_fk foreign key (id, live_version)
      references agent_versions (agent_id, version) deferrable initially deferred;
    alter table agents drop column instructions, drop column provider, drop column model, drop column tools;

    alter table actions add column agent_version int;
    update actions set agent_version = 1 where agent_id is not null;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table actions drop column agent_version;
    alter table agents add column instructions text not null default '',
      add column provider text check (provider in ('openai-compatible', 'openai', 'anthropic')),
      add column model text, add column tools jsonb not null default '[]';
    update agents g set instructions = v.instructions, provider = v.provider, model = v.model, tools = v.tools
      from agent_versions v where v.agent_id = g.id and v.version = g.live_version;
    alter table agents drop constraint agents_live_version_fk;
    alter table agents drop column live_version;
    drop table agent_publications;
    drop table agent_versions;
  `.execute(db);
}
