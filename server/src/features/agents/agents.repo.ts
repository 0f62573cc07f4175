import { sql, type Insertable, type Kysely } from 'kysely';
import type { ActionRuleRow, ActionRulesTable, AgentRow, AgentsTable, ArgumentRule, DB, ModelProvider } from '../../db/schema.ts';

/** Agents and action rules of one org; every query is scoped by org_id. */
export const agentsRepo = {
  insert: (
    db: Kysely<DB>,
    agent: Omit<Insertable<AgentsTable>, 'tools' | 'createdAt' | 'updatedAt'> & { tools: string[] },
  ): Promise<AgentRow> =>
    db
      .insertInto('agents')
      .values({ ...agent, tools: JSON.stringify(agent.tools) })
      .returningAll()
      .executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string): Promise<AgentRow[]> =>
    db.selectFrom('agents').selectAll().where('orgId', '=', orgId).orderBy('createdAt', 'desc').orderBy('id', 'desc').execute(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<AgentRow | undefined> =>
    db.selectFrom('agents').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  update: (
    db: Kysely<DB>,
    orgId: string,
    id: string,
    changes: { name?: string; instructions?: string; provider?: ModelProvider | null; model?: string | null; tools?: string[] },
  ) =>
    db
      .updateTable('agents')
      .set({ ...changes, tools: changes.tools === undefined ? undefined : JSON.stringify(changes.tools), updatedAt: sql<Date>`now()` })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  delete: async (db: Kysely<DB>, orgId: string, id: string): Promise<boolean> =>
    (await db.deleteFrom('agents').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
};

export const actionRulesRepo = {
  insert: (
    db: Kysely<DB>,
    rule: Omit<Insertable<ActionRulesTable>, 'approvalRules' | 'argumentRules' | 'createdAt' | 'updatedAt'> & {
      approvalRules: Record<string, string>;
      argumentRules: ArgumentRule[];
    },
  ): Promise<ActionRuleRow> =>
    db
      .insertInto('actionRules')
      .values({ ...rule, approvalRules: JSON.stringify(rule.approvalRules), argumentRules: JSON.stringify(rule.argumentRules) })
      .returningAll()
      .executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string): Promise<ActionRuleRow[]> =>
    db.selectFrom('actionRules').selectAll().where('orgId', '=', orgId).orderBy('createdAt', 'desc').orderBy('id', 'desc').execute(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<ActionRuleRow | undefined> =>
    db.selectFrom('actionRules').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  update: (
    db: Kysely<DB>,
    orgId: string,
    id: string,
    changes: {
      name?: string;
      agentId?: string | null;
      instructions?: string;
      enabled?: boolean;
      approvalRules?: Record<string, string>;
      argumentRules?: ArgumentRule[];
      approvalTimeoutSeconds?: number;
    },
  ) =>
    db
      .updateTable('actionRules')
      .set({
        ...changes,
        approvalRules: changes.approvalRules === undefined ? undefined : JSON.stringify(changes.approvalRules),
        argumentRules: changes.argumentRules === undefined ? undefined : JSON.stringify(changes.argumentRules),
        updatedAt: sql<Date>`now()`,
      })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  delete: async (db: Kysely<DB>, orgId: string, id: string): Promise<boolean> =>
    (await db.deleteFrom('actionRules').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
};
