import { sql, type Kysely } from 'kysely';

/**
 * Each tool call's place among its action's calls, in the order the model proposed them (a run held
 * over its budget in its place between them). The calls of one step share their requested_at, and
 * their ids are random: the ledger, the approval email and Slack listed them in no order.
 * The calls stored before are numbered from their conversation: by when they were requested, then
 * by the assistant message that proposed them and their place in it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table tool_calls add column position int;`.execute(db);
  await sql`
    with proposed as (
      select m.action_id, part ->> 'toolCallId' as tool_call_id, m.seq, o.ordinality
      from thread_messages m
      cross join lateral jsonb_array_elements(m.content) with ordinality as o(part, ordinality)
      where m.role = 'assistant' and m.action_id is not null and jsonb_typeof(m.content) = 'array'
        and part ->> 'type' = 'tool-call'
    ), numbered as (
      select c.id, row_number() over (
        partition by c.action_id order by c.requested_at, p.seq nulls last, p.ordinality nulls last, c.id
      ) - 1 as position
      from tool_calls c
      left join proposed p on p.action_id = c.action_id and p.tool_call_id = c.tool_call_id
    )
    update tool_calls c set position = n.position from numbered n where n.id = c.id;
  `.execute(db);
  await sql`alter table tool_calls alter column position set not null;`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table tool_calls drop column position;`.execute(db);
}
