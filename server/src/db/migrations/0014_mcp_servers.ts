import { sql, type Kysely } from 'kysely';

/**
 * The org's MCP servers and the tools each listed when last asked (replaced whole on each listing);
 * credentials encrypted, hints only shown. Argument rules on action rules. On tool calls: when a call
 * that may not be repeated was started (committed before its request left, so that a run resumed
 * after a crash knows it may have happened), what decided its mode, and why a call waits for a human
 * when it is not the mode (an interrupted call).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table mcp_servers (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      name text not null,
      url text not null,
      headers_encrypted text,
      header_hints jsonb not null default '{}',
      auth jsonb,
      client_secret_encrypted text,
      server_info jsonb,
      tools jsonb not null default '[]',
      tools_listed_at timestamptz(3),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now(),
      unique (org_id, name)
    );
    alter table action_rules add column argument_rules jsonb not null default '[]';
    alter table tool_calls add column started_at timestamptz(3);
    alter table tool_calls add column mode_source jsonb;
    alter table tool_calls add column staged_reason text;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table mcp_servers;
    alter table action_rules drop column argument_rules;
    alter table tool_calls drop column started_at;
    alter table tool_calls drop column mode_source;
    alter table tool_calls drop column staged_reason;
  `.execute(db);
}
