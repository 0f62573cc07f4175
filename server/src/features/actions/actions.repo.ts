import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';

/** Actions as the runtime and the ledger read them. */
export const actionsRepo = {
  events: (db: Kysely<DB>, actionId: string) =>
    db.selectFrom('actionEvents').select(['status', 'cause', 'data', 'createdAt']).where('actionId', '=', actionId).orderBy('createdAt').orderBy('id').execute(),

  /** Locks the action row for the rest of the transaction: runner and deciders take turns. */
  lock: (trx: Kysely<DB>, actionId: string) =>
    trx.selectFrom('actions').select(['id', 'orgId', 'status', 'threadId', 'leaseExpiresAt', 'runAsUserId']).where('id', '=', actionId).forUpdate().executeTakeFirst(),

  /** Everything a run needs: the action, its agent, its rule and whether its webhook allows overrides. */
  runContext: (db: Kysely<DB>, actionId: string) =>
    db.selectFrom('actions as a')
      .leftJoin('agents as g', 'g.id', 'a.agentId')
      .leftJoin('actionRules as r', 'r.id', 'a.actionRuleId')
      .leftJoin('webhooks as w', 'w.id', 'a.webhookId')
      .select([
        'a.id', 'a.orgId', 'a.status', 'a.threadId', 'a.runAsUserId', 'a.eventType', 'a.externalId', 'a.instructions', 'a.data', 'a.toolApprovals',
        'a.agentId', 'g.instructions as agentInstructions', 'g.provider', 'g.model', 'g.tools', 'g.name as agentName',
        'r.instructions as ruleInstructions', 'r.approvalRules', 'r.approvalTimeoutSeconds', 'w.allowRequestOverrides',
      ])
      .where('a.id', '=', actionId)
      .executeTakeFirst(),

  setLease: (db: Kysely<DB>, actionId: string, until: Date | null) =>
    db.updateTable('actions').set({ leaseExpiresAt: until }).where('id', '=', actionId).where('status', '=', 'running').execute(),

  setThread: (trx: Kysely<DB>, actionId: string, threadId: string) => trx.updateTable('actions').set({ threadId }).where('id', '=', actionId).execute(),

  /** Running actions whose runner stopped renewing its lease (its process died). */
  abandoned: (db: Kysely<DB>, now: Date) =>
    db.selectFrom('actions').select(['id', 'leaseExpiresAt']).where('status', '=', 'running').where((eb) => eb.or([eb('leaseExpiresAt', '<', now), eb('leaseExpiresAt', 'is', null)])).limit(1000).execute(),

  /** Running actions with any lease, for a starting worker to schedule their resumption once it lapses. */
  running: (db: Kysely<DB>) => db.selectFrom('actions').select(['id', 'leaseExpiresAt']).where('status', '=', 'running').limit(1000).execute(),
};
