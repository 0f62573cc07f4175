import { sql, type Insertable, type Kysely } from 'kysely';
import type {
  ActionRuleRow,
  ActionRulesTable,
  AgentRow,
  AgentsTable,
  ArgumentRule,
  DB,
  ModelProvider,
  NotifyChannel,
  RuleApprovers,
} from '../../db/schema.ts';

/** Agents and action rules of one org; every query is scoped by org_id. */
export const agentsRepo = {
  insert: (
    db: Kysely<DB>,
    agent: Omit<Insertable<AgentsTable>, 'tools' | 'budget' | 'createdAt' | 'updatedAt'> & { tools: string[] },
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
    changes: {
      name?: string;
      instructions?: string;
      provider?: ModelProvider | null;
      model?: string | null;
      tools?: string[];
    },
  ) =>
    db
      .updateTable('agents')
      .set({
        ...changes,
        tools: changes.tools === undefined ? undefined : JSON.stringify(changes.tools),
        updatedAt: sql<Date>`now()`,
      })
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
    rule: Omit<
      Insertable<ActionRulesTable>,
      'approvalRules' | 'argumentRules' | 'approvers' | 'notify' | 'createdAt' | 'updatedAt'
    > & {
      approvalRules: Record<string, string>;
      argumentRules: ArgumentRule[];
      approvers: RuleApprovers | null;
      notify: NotifyChannel[];
    },
  ): Promise<ActionRuleRow> =>
    db
      .insertInto('actionRules')
      .values({
        ...rule,
        approvalRules: JSON.stringify(rule.approvalRules),
        argumentRules: JSON.stringify(rule.argumentRules),
        approvers: rule.approvers === null ? null : JSON.stringify(rule.approvers),
        notify: JSON.stringify(rule.notify),
      })
      .returningAll()
      .executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string): Promise<ActionRuleRow[]> =>
    db
      .selectFrom('actionRules')
      .selectAll()
      .where('orgId', '=', orgId)
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .execute(),

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
      approvers?: RuleApprovers | null;
      notify?: NotifyChannel[];
    },
  ) =>
    db
      .updateTable('actionRules')
      .set({
        ...changes,
        approvalRules: changes.approvalRules === undefined ? undefined : JSON.stringify(changes.approvalRules),
        argumentRules: changes.argumentRules === undefined ? undefined : JSON.stringify(changes.argumentRules),
        approvers:
          changes.approvers === undefined ? undefined : changes.approvers === null ? null : JSON.stringify(changes.approvers),
        notify: changes.notify === undefined ? undefined : JSON.stringify(changes.notify),
        updatedAt: sql<Date>`now()`,
      })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  /** Of these users, the ones who are members of the org. */
  members: async (db: Kysely<DB>, orgId: string, userIds: string[]): Promise<string[]> =>
    userIds.length === 0
      ? []
      : (
          await db.selectFrom('memberships').select('userId').where('orgId', '=', orgId).where('userId', 'in', userIds).execute()
        ).map((row) => row.userId),

  delete: async (db: Kysely<DB>, orgId: string, id: string): Promise<boolean> =>
    (await db.deleteFrom('actionRules').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
};
