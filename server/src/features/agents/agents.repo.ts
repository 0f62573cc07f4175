import { sql, type Insertable, type Kysely } from 'kysely';
import type { ActionRuleRow, ActionRulesTable, ArgumentRule, DB, NotifyChannel, RuleApprovers } from '../../db/schema.ts';

/** An agent as the API shows it: its identity, name and budget, and what its live version does. */
function agentsWithLive(db: Kysely<DB>, orgId: string) {
  return db
    .selectFrom('agents as g')
    .innerJoin('agentVersions as v', (join) => join.onRef('v.agentId', '=', 'g.id').onRef('v.version', '=', 'g.liveVersion'))
    .select([
      'g.id',
      'g.orgId',
      'g.name',
      'g.liveVersion',
      'v.instructions',
      'v.provider',
      'v.model',
      'v.tools',
      'g.budget',
      'g.createdAt',
      'g.updatedAt',
    ])
    .where('g.orgId', '=', orgId);
}
export type AgentWithLive = Awaited<ReturnType<ReturnType<typeof agentsWithLive>['executeTakeFirstOrThrow']>>;

/** Agents and action rules of one org; every query is scoped by org_id. */
export const agentsRepo = {
  /** A new agent, live at version 1 (written in the same transaction: the live version is checked at commit). */
  insert: (db: Kysely<DB>, agent: { id: string; orgId: string; name: string }) =>
    db.insertInto('agents').values(agent).returning('id').executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string): Promise<AgentWithLive[]> =>
    agentsWithLive(db, orgId).orderBy('g.createdAt', 'desc').orderBy('g.id', 'desc').execute(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<AgentWithLive | undefined> =>
    agentsWithLive(db, orgId).where('g.id', '=', id).executeTakeFirst(),

  /** Locks the agent for the rest of the transaction: versions are numbered and published one at a time. */
  lock: (trx: Kysely<DB>, orgId: string, id: string) =>
    trx
      .selectFrom('agents')
      .select(['id', 'liveVersion'])
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst(),

  update: (db: Kysely<DB>, orgId: string, id: string, changes: { name?: string; liveVersion?: number }) =>
    db
      .updateTable('agents')
      .set({ ...changes, updatedAt: sql<Date>`now()` })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returning('id')
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
      minApprovals?: number;
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

  delete: async (db: Kysely<DB>, orgId: string, id: string): Promise<boolean> =>
    (await db.deleteFrom('actionRules').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst()).numDeletedRows > 0n,
};
