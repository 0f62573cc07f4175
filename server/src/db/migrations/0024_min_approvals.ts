import { sql, type Kysely } from 'kysely';

/**
 * An action rule may ask for more than one approver (min_approvals, 1 to 5). Every approval of a call is kept, one row
 * each; an approver's edit that changes the arguments supersedes the approvals of the earlier ones (they start again).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table action_rules add column min_approvals integer not null default 1
      check (min_approvals between 1 and 5);
    create table tool_call_approvals (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      tool_call_id uuid not null references tool_calls (id) on delete cascade,
      user_id uuid references users (id) on delete set null,
      channel text not null check (channel in ('console', 'api', 'email_link', 'email_reply')),
      arguments jsonb,
      reason text,
      superseded_at timestamptz(3),
      created_at timestamptz(3) not null default now()
    );
    create index tool_call_approvals_call on tool_call_approvals (tool_call_id, created_at);

    -- An approval that is not the last one changes no tool call's status: the console hears of it here.
    create function announce_tool_call_approvals() returns trigger language plpgsql as $$
    declare changes jsonb;
    begin
      if not org_events_watched() then return null; end if;
      select jsonb_agg(jsonb_build_array(n.org_id, t.action_id)) into changes
      from new_rows n join tool_calls t on t.id = n.tool_call_id;
      if changes is not null then perform announce_org_changes('approval', changes); end if;
      return null;
    end $$;
    create trigger tool_call_approvals_announce after insert on tool_call_approvals
      referencing new table as new_rows for each statement execute function announce_tool_call_approvals();
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    drop table tool_call_approvals;
    drop function announce_tool_call_approvals();
    alter table action_rules drop column min_approvals;
  `.execute(db);
}
