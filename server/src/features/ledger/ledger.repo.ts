import { sql, type Kysely } from 'kysely';
import type { ActionSource, DB } from '../../db/schema.ts';
import { olderThan } from '../../db/keyset.ts';
import type { Cursor } from '../../lib/pagination.ts';

export interface LedgerFilters {
  kind?: 'action' | 'delivery';
  source?: ActionSource;
  status?: string;
  webhookId?: string;
  eventType?: string;
  q?: string;
}

/** Every delivery, with the action it created if any: the ledger's rows. */
function ledgerQuery(db: Kysely<DB>, orgId: string) {
  return db
    .selectFrom('webhookDeliveries as d')
    .leftJoin('actions as a', 'a.id', 'd.actionId')
    .leftJoin('agents as g', 'g.id', 'a.agentId')
    .where('d.orgId', '=', orgId)
    .select([
      'd.id as eventId',
      'd.actionId',
      'd.webhookId',
      'd.status as deliveryStatus',
      'd.reason',
      'd.replayable',
      'd.eventType',
      'd.externalId',
      'd.verificationScheme',
      'd.source',
      'd.attempts',
      'd.nextAttemptAt',
      'd.createdAt',
      'd.updatedAt',
      'a.status as actionStatus',
      'a.approvalState',
      'a.agentVersion',
      'g.liveVersion as agentLiveVersion',
      // Why an action ended as it did: its error, else the cause of the transition that ended it (a rejection with its reason).
      sql<string | null>`case when a.status in ('failed', 'rejected', 'expired') then coalesce(a.error, (
        select e.cause from action_events e where e.action_id = a.id and e.status = a.status
          order by e.created_at desc limit 1)) end`.as('actionReason'),
    ]);
}

export const ledgerRepo = {
  list(db: Kysely<DB>, orgId: string, filters: LedgerFilters, limit: number, after?: Cursor) {
    const escaped = filters.q?.replace(/[\\%_]/g, (char) => `\\${char}`);
    return ledgerQuery(db, orgId)
      .$if(filters.kind === 'action', (q) => q.where('d.actionId', 'is not', null))
      .$if(filters.kind === 'delivery', (q) => q.where('d.actionId', 'is', null))
      .$if(filters.status !== undefined, (q) =>
        q.where((eb) =>
          eb.or([
            eb('a.status', '=', filters.status as never),
            eb.and([eb('a.id', 'is', null), eb('d.status', '=', filters.status as never)]),
          ]),
        ),
      )
      .$if(filters.source !== undefined, (q) => q.where('d.source', '=', filters.source!))
      .$if(filters.webhookId !== undefined, (q) => q.where('d.webhookId', '=', filters.webhookId!))
      .$if(filters.eventType !== undefined, (q) => q.where('d.eventType', '=', filters.eventType!))
      .$if(escaped !== undefined, (q) =>
        q.where((eb) => eb.or([eb('d.externalId', 'ilike', `%${escaped}%`), eb('d.eventType', 'ilike', `%${escaped}%`)])),
      )
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 'd.createdAt', 'd.id')))
      .orderBy('d.createdAt', 'desc')
      .orderBy('d.id', 'desc')
      .limit(limit + 1)
      .execute();
  },

  /**
   * One row by its eventId, or by the actionId of the action it created: an action names the
   * delivery that created it, so either way the row is found by primary keys.
   */
  find: (db: Kysely<DB>, orgId: string, id: string) =>
    ledgerQuery(db, orgId)
      .select([
        'd.payload',
        'd.rawBody',
        'd.headers',
        'd.sourceIp',
        'd.lastError',
        'a.result',
        'a.error',
        'a.runAsUserId',
        'a.agentId',
        'a.actionRuleId',
        'a.toolApprovals',
        'a.deliveryId as actionDeliveryId',
        'a.createdAt as actionCreatedAt',
        'a.threadId',
      ])
      .where((eb) =>
        eb(
          'd.id',
          '=',
          eb.fn.coalesce(
            eb.selectFrom('actions').select('deliveryId').where('id', '=', id).where('orgId', '=', orgId),
            eb.val(id),
          ),
        ),
      )
      .executeTakeFirst(),

  /** Whom the action's approvers' notifications reached, per tool call row, when, how, or why not. */
  approvalNotifications: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('approvalNotifications')
      .select(['toolCallId', 'userId', 'address', 'channel', 'status', 'reason', 'createdAt', 'updatedAt'])
      .where('actionId', '=', actionId)
      .orderBy('createdAt')
      .orderBy('id')
      .execute(),
};
