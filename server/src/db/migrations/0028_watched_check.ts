import { sql, type Kysely } from 'kysely';

/**
 * org_events_watched() in PL/pgSQL. Every announce trigger (migration 0011) asks it first, once per
 * statement that writes actions, deliveries, tool calls or callbacks. As a SQL function it could not be
 * inlined (its body has a subquery), and PostgreSQL before 18 parses and plans such a function's body
 * at each call: about 50 µs of PostgreSQL's CPU per statement, half the cost of a transition statement
 * that moves nothing (docs/benchmarks.md). PL/pgSQL keeps its plan for the session.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function org_events_watched() returns boolean language plpgsql stable as $$
    begin
      return exists (select 1 from org_event_streams where expires_at > now());
    end $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function org_events_watched() returns boolean language sql stable as $$
      select exists (select 1 from org_event_streams where expires_at > now())
    $$;
  `.execute(db);
}
