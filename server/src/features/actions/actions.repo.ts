import { type Kysely, type QueryCreator, type RawBuilder, sql } from 'kysely';
import { uncountedIds } from '../../db/prepared.ts';
import { queryTemplate } from '../../db/query-template.ts';
import type { DB, ModelProvider } from '../../db/schema.ts';

/**
 * The one insert of actions: each row of `source` (a query with the columns id, org_id, webhook_id,
 * delivery_id, agent_id, action_rule_id, run_as_user_id, event_type, external_id, instructions, data,
 * tool_approvals) becomes a queued action of its agent's live version, unless its webhook has an action with its externalId
 * already. Returns the ids it inserted. A fragment, so that ingest can embed it in its one statement.
 */
export function insertQueuedActions(source: RawBuilder<unknown>): RawBuilder<{ id: string }> {
  return sql<{ id: string }>`
    insert into actions (id, org_id, webhook_id, delivery_id, agent_id, agent_version, action_rule_id, run_as_user_id, status,
      event_type, external_id, instructions, data, tool_approvals, trace_parent)
    select id, org_id, webhook_id, delivery_id, agent_id, (select live_version from agents g where g.id = new_action.agent_id),
      action_rule_id, run_as_user_id, 'queued', event_type, external_id, instructions, data, tool_approvals, trace_parent
    from (${source}) as new_action
    on conflict (webhook_id, external_id) where external_id is not null do nothing
    returning id`;
}

/**
 * The insert of an action that answers a received email (queued, of the inbox's agent's live version,
 * with the assignment's approval and argument rules), unexecuted: the inbound path makes it part of its
 * one statement, built once as a template (each field is bound as a value; data and rules are JSON text).
 */
export function emailActionInsert(
  creator: QueryCreator<DB>,
  action: {
    id: string;
    orgId: string;
    deliveryId: string;
    agentId: string;
    runAsUserId: string;
    emailMessageId: string;
    instructions: string;
    traceParent: string | null;
    data: string;
    approvalRules: string;
    argumentRules: string;
    notify: string;
  },
) {
  return creator.insertInto('actions').values((eb) => ({
    id: action.id,
    orgId: action.orgId,
    deliveryId: action.deliveryId,
    agentId: action.agentId,
    agentVersion: eb.selectFrom('agents').select('liveVersion').where('id', '=', action.agentId),
    runAsUserId: action.runAsUserId,
    emailMessageId: action.emailMessageId,
    instructions: action.instructions,
    traceParent: action.traceParent,
    data: action.data,
    approvalRules: action.approvalRules,
    argumentRules: action.argumentRules,
    notify: action.notify,
    source: 'email',
    status: 'queued',
    eventType: 'email.received',
    toolApprovals: '{}',
  }));
}

/** What a run of each action reads (runContexts). */
const runContexts = queryTemplate((db, args: { actionIds: string[]; defaultProvider: ModelProvider; version: number | null }) =>
  db
    .selectFrom('actions as a')
    .leftJoin('agents as g', 'g.id', 'a.agentId')
    // The version the action was created with (an older row without one: the live version), or the one asked for.
    .leftJoin('agentVersions as v', (join) =>
      join
        .onRef('v.agentId', '=', 'g.id')
        .on('v.version', '=', sql<number>`coalesce(${args.version}::int, a.agent_version, g.live_version)`),
    )
    .leftJoin('actionRules as r', 'r.id', 'a.actionRuleId')
    .leftJoin('webhooks as w', 'w.id', 'a.webhookId')
    .leftJoin('users as u', 'u.id', 'a.runAsUserId')
    .select([
      'a.id',
      'a.orgId',
      'a.status',
      'a.threadId',
      'a.takeovers',
      'a.traceParent',
      'a.createdAt',
      'u.id as runAsUserId',
      'a.eventType',
      'a.externalId',
      'a.instructions',
      'a.data',
      'a.toolApprovals',
      'g.id as agentId',
      // The agent it was created with, also when that agent is deleted since.
      'a.agentId as createdWithAgentId',
      'v.version as agentVersion',
      'v.instructions as agentInstructions',
      'v.provider',
      'v.model',
      'v.tools',
      'g.name as agentName',
      'r.instructions as ruleInstructions',
      // An action without a rule (an email's) carries the rules it was created with.
      (eb) => eb.fn.coalesce('r.approvalRules', 'a.approvalRules').as('approvalRules'),
      'r.approvalTimeoutSeconds',
      // How the approvers are told of a waiting call: the rule's, or the inbox's an email's action was created with.
      (eb) => eb.fn.coalesce('r.notify', 'a.notify').as('notify'),
      // An email's action carries the argument rules of its inbox's assignment, as its approval rules.
      (eb) => eb.fn.coalesce('r.argumentRules', 'a.argumentRules').as('argumentRules'),
      'a.source',
      'w.allowRequestOverrides',
      (eb) =>
        eb
          .selectFrom('userToolPreferences as p')
          .whereRef('p.userId', '=', 'u.id')
          .where('p.preference', '=', 'always_deny')
          .select(sql<string[]>`coalesce(array_agg(p.tool_name), '{}')`.as('tools'))
          .as('deniedTools'),
      (eb) =>
        eb
          .selectFrom('orgModelCredentials as c')
          .whereRef('c.orgId', '=', 'a.orgId')
          .where('c.provider', '=', sql<ModelProvider>`coalesce(${eb.ref('v.provider')}, ${args.defaultProvider})`)
          .select('c.apiKeyEncrypted')
          .as('orgApiKeyEncrypted'),
    ])
    // Uncounted, so that the statement keeps its generic plan instead of being planned at every load.
    .where((eb) => eb('a.id', '=', eb.fn.any(uncountedIds(args.actionIds)))),
);

/** Actions as the runtime and the ledger read them. */
export const actionsRepo = {
  events: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('actionEvents')
      .select(['status', 'cause', 'data', 'createdAt'])
      .where('actionId', '=', actionId)
      .orderBy('createdAt')
      .orderBy('id')
      .execute(),

  /** Locks the org's action row for the rest of the transaction: runner and deciders take turns. */
  lock: (trx: Kysely<DB>, orgId: string, actionId: string) =>
    trx
      .selectFrom('actions')
      .select(['id', 'orgId', 'status', 'threadId', 'leaseExpiresAt', 'runAsUserId'])
      .where('id', '=', actionId)
      .where('orgId', '=', orgId)
      .forUpdate()
      .executeTakeFirst(),

  /**
   * Everything a run needs, in one query: the action, its agent, its rule, whether its webhook allows
   * overrides, the tools its run-as user always denies, and the org's key for the agent's provider.
   * The action keeps the ids it was created with; `agentId` and `runAsUserId` are null here when
   * that agent or user no longer exists. With `version`, the agent's behaviour is that version's (an experiment's replay).
   */
  runContexts: (db: Kysely<DB>, actionIds: string[], defaultProvider: ModelProvider, version?: number) =>
    runContexts.rows(db, { actionIds, defaultProvider, version: version ?? null }),

  /** Renews a runner's lease (on the database's clock, like the claim) while its claim's token holds; false when not renewed. */
  renewLease: async (db: Kysely<DB>, actionId: string, runToken: string, leaseMs: number) => {
    const { numUpdatedRows } = await db
      .updateTable('actions')
      .set({ leaseExpiresAt: sql<Date>`now() + ${leaseMs}::int * interval '1 millisecond'` })
      .where('id', '=', actionId)
      .where('status', '=', 'running')
      .where('runToken', '=', runToken)
      .executeTakeFirstOrThrow();
    return numUpdatedRows > 0n;
  },

  /** The token of the action's latest claim for a run (lifecycle.ts: claimRunnable). */
  runToken: async (db: Kysely<DB>, actionId: string) =>
    (await db.selectFrom('actions').select('runToken').where('id', '=', actionId).executeTakeFirst())?.runToken,

  /** Gives up a runner's lease at once (its process is stopping): another runner may claim the action now. */
  releaseLease: (db: Kysely<DB>, actionId: string, runToken: string) =>
    db
      .updateTable('actions')
      .set({ leaseExpiresAt: null })
      .where('id', '=', actionId)
      .where('status', '=', 'running')
      // Not another claim's: that runner holds the action now.
      .where('runToken', '=', runToken)
      .execute(),
};
