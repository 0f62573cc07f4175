import { sql, type Kysely } from 'kysely';

/**
 * The console's live stream (features/events): committed changes to ledger rows and approvals are
 * announced by NOTIFY on the channel the process bus listens on, so every process hears a change
 * whichever process (or job) made it, and only once it is committed (NOTIFY is transactional).
 * Statement-level triggers with transition tables: a batched insert (the ingest writer puts many
 * deliveries in one statement) costs one NOTIFY, not one per row. And only while someone watches:
 * a process with open streams keeps a row in org_event_streams (features/events), and without one
 * the triggers stop at a lookup in that tiny table (a NOTIFY per transition cost ingest ~10%).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table org_event_streams (
      process_id uuid primary key,
      expires_at timestamptz(3) not null
    );
    create function org_events_watched() returns boolean language sql stable as $$
      select exists (select 1 from org_event_streams where expires_at > now())
    $$;

    -- One NOTIFY per statement (each costs a step of the commit): up to 80 [org, id] pairs; past
    -- that, only the orgs, which listeners take as "refetch everything" (a NOTIFY carries 8000 bytes).
    create function announce_org_changes(kind text, changes jsonb) returns void language plpgsql as $$
    begin
      perform pg_notify('agent_platform_invalidate', jsonb_build_object('o', 'database', 't', 'org-events', 'k',
        case when jsonb_array_length(changes) <= 80
          then jsonb_build_object('kind', kind, 'changes', changes)
          else jsonb_build_object('kind', kind, 'orgs', (select jsonb_agg(distinct c->0) from jsonb_array_elements(changes) c))
        end::text)::text);
    end $$;

    create function announce_deliveries() returns trigger language plpgsql as $$
    declare changes jsonb;
    begin
      if not org_events_watched() then return null; end if;
      select jsonb_agg(jsonb_build_array(org_id, coalesce(action_id, id))) into changes from new_rows;
      if changes is not null then perform announce_org_changes('ledger', changes); end if;
      return null;
    end $$;
    create trigger deliveries_announce_insert after insert on webhook_deliveries
      referencing new table as new_rows for each statement execute function announce_deliveries();
    create trigger deliveries_announce_update after update on webhook_deliveries
      referencing new table as new_rows for each statement execute function announce_deliveries();

    -- Lease renewals and other bookkeeping do not concern the ledger: only status and approval changes.
    create function announce_actions() returns trigger language plpgsql as $$
    declare changes jsonb;
    begin
      if not org_events_watched() then return null; end if;
      select jsonb_agg(jsonb_build_array(n.org_id, n.id)) into changes
      from new_rows n join old_rows o on o.id = n.id
      where n.status is distinct from o.status or n.approval_state is distinct from o.approval_state;
      if changes is not null then perform announce_org_changes('ledger', changes); end if;
      return null;
    end $$;
    create trigger actions_announce_update after update on actions
      referencing old table as old_rows new table as new_rows for each statement execute function announce_actions();

    -- Approvals: a staged call, or one decided, expired or cancelled (ids are the actions').
    create function announce_tool_calls() returns trigger language plpgsql as $$
    declare changes jsonb;
    begin
      if not org_events_watched() then return null; end if;
      if tg_op = 'INSERT' then
        select jsonb_agg(jsonb_build_array(org_id, action_id)) into changes from new_rows where approval = 'pending';
      else
        select jsonb_agg(jsonb_build_array(n.org_id, n.action_id)) into changes
        from new_rows n join old_rows o on o.id = n.id where n.approval is distinct from o.approval or n.status is distinct from o.status;
      end if;
      if changes is not null then perform announce_org_changes('approval', changes); end if;
      return null;
    end $$;
    create trigger tool_calls_announce_insert after insert on tool_calls
      referencing new table as new_rows for each statement execute function announce_tool_calls();
    create trigger tool_calls_announce_update after update on tool_calls
      referencing old table as old_rows new table as new_rows for each statement execute function announce_tool_calls();

    -- A callback attempt shows in its action's ledger row (not the dispatcher's claims).
    create function announce_callbacks() returns trigger language plpgsql as $$
    declare changes jsonb;
    begin
      if not org_events_watched() then return null; end if;
      select jsonb_agg(jsonb_build_array(n.org_id, n.action_id)) into changes
      from new_rows n join old_rows o on o.id = n.id
      where n.attempt_count is distinct from o.attempt_count or n.status is distinct from o.status;
      if changes is not null then perform announce_org_changes('ledger', changes); end if;
      return null;
    end $$;
    create trigger callback_deliveries_announce_update after update on callback_deliveries
      referencing old table as old_rows new table as new_rows for each statement execute function announce_callbacks();
  `.execute(db);
}
