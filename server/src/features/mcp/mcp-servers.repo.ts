import { TERMINAL_STATUSES } from '../actions/lifecycle.ts';
import { sql, type Insertable, type Kysely, type Updateable } from 'kysely';
import type { DB, McpServerRow, McpServersTable } from '../../db/schema.ts';

/** Tools are always stored as a whole listing, and stamped with when they were listed. */
export const mcpServersRepo = {
  insert: (db: Kysely<DB>, row: Insertable<McpServersTable>): Promise<McpServerRow> =>
    db
      .insertInto('mcpServers')
      .values({ ...row, toolsListedAt: sql<Date>`now()` })
      .returningAll()
      .executeTakeFirstOrThrow(),

  update: (db: Kysely<DB>, orgId: string, id: string, changes: Updateable<McpServersTable>): Promise<McpServerRow | undefined> =>
    db
      .updateTable('mcpServers')
      .set({
        ...changes,
        ...(changes.tools === undefined ? {} : { toolsListedAt: sql<Date>`now()` }),
        updatedAt: sql<Date>`now()`,
      })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<McpServerRow | undefined> =>
    db.selectFrom('mcpServers').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  /** Whether another server of the org has this name. */
  nameTaken: async (db: Kysely<DB>, orgId: string, name: string, except?: string): Promise<boolean> =>
    (await db
      .selectFrom('mcpServers')
      .select('id')
      .where('orgId', '=', orgId)
      .where('name', '=', name)
      .$if(except !== undefined, (query) => query.where('id', '<>', except!))
      .executeTakeFirst()) !== undefined,

  list: (db: Kysely<DB>, orgId: string): Promise<McpServerRow[]> =>
    db.selectFrom('mcpServers').selectAll().where('orgId', '=', orgId).orderBy('name').execute(),

  /** Whether a server of one of the user's orgs offers a tool of this name. */
  offeredToMember: async (db: Kysely<DB>, userId: string, toolName: string): Promise<boolean> =>
    (await db
      .selectFrom('mcpServers')
      .innerJoin('memberships', 'memberships.orgId', 'mcpServers.orgId')
      .select('mcpServers.id')
      .where('memberships.userId', '=', userId)
      .where(sql<boolean>`mcp_servers.tools @> ${JSON.stringify([{ offeredAs: toolName }])}::jsonb`)
      .executeTakeFirst()) !== undefined,

  /**
   * The agents, action rules and inbox assignments of the org that name a tool of the server called
   * `serverName` (its tools are `<serverName>__<tool>`): in the tools of an agent's live version or of a
   * version an unfinished action runs with, in a rule's or an assignment's approval modes or argument
   * rules. (A draft or an old version may name it: publishing one checks its tools again.)
   */
  namingTools: async (
    db: Kysely<DB>,
    orgId: string,
    serverName: string,
  ): Promise<Array<{ kind: 'agent' | 'rule' | 'inbox assignment'; name: string }>> => {
    const prefix = `${serverName}__`;
    const namesTool = (table: 'action_rules' | 'a') =>
      sql<boolean>`(
        exists (select 1 from jsonb_object_keys(${sql.ref(`${table}.approval_rules`)}) as tool
          where starts_with(tool, ${prefix}))
        or exists (select 1 from jsonb_array_elements(${sql.ref(`${table}.argument_rules`)}) as rule
          where starts_with(rule->>'tool', ${prefix}))
      )`;
    const [agents, rules, assignments] = await Promise.all([
      // An agent's version that can run: its live one, and any one that an unfinished action runs with.
      db
        .selectFrom('agents as g')
        .select('g.name')
        .where('g.orgId', '=', orgId)
        .where(
          sql<boolean>`exists (select 1 from agent_versions v where v.agent_id = g.id
            and (v.version = g.live_version or exists (select 1 from actions a where a.agent_id = g.id
              and a.agent_version = v.version and a.status <> all(${TERMINAL_STATUSES}::text[])))
            and exists (select 1 from jsonb_array_elements_text(v.tools) as tool where starts_with(tool, ${prefix})))`,
        )
        .orderBy('g.name')
        .execute(),
      db
        .selectFrom('actionRules')
        .select('name')
        .where('orgId', '=', orgId)
        .where(namesTool('action_rules'))
        .orderBy('name')
        .execute(),
      db
        .selectFrom('emailInboxAgents as a')
        .innerJoin('emailInboxes as i', 'i.id', 'a.inboxId')
        .innerJoin('agents as g', 'g.id', 'a.agentId')
        .select(['i.emailAddress', 'g.name'])
        .where('a.orgId', '=', orgId)
        .where(namesTool('a'))
        .orderBy('i.emailAddress')
        .orderBy('g.name')
        .execute(),
    ]);
    return [
      ...agents.map(({ name }) => ({ kind: 'agent' as const, name })),
      ...rules.map(({ name }) => ({ kind: 'rule' as const, name })),
      ...assignments.map(({ emailAddress, name }) => ({ kind: 'inbox assignment' as const, name: `${emailAddress}: ${name}` })),
    ];
  },

  /** Whether there was one to delete. */
  remove: async (db: Kysely<DB>, orgId: string, id: string): Promise<boolean> =>
    (await db.deleteFrom('mcpServers').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
};
