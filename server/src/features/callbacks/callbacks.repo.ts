import type { Insertable, Kysely, Updateable } from 'kysely';
import { sql } from 'kysely';
import type { CallbackDeliveryStatus, CallbackEndpointRow, CallbackEndpointsTable, DB } from '../../db/schema.ts';
import { olderThan } from '../../db/keyset.ts';
import type { Cursor } from '../../lib/pagination.ts';

export const callbackEndpointsRepo = {
  /** Endpoints hang off an action webhook of the org: whether that webhook exists there. */
  webhookExists: async (db: Kysely<DB>, orgId: string, webhookId: string): Promise<boolean> =>
    (await db.selectFrom('webhooks').select('id').where('orgId', '=', orgId).where('id', '=', webhookId).executeTakeFirst()) !==
    undefined,

  insert: (db: Kysely<DB>, row: Insertable<CallbackEndpointsTable>): Promise<CallbackEndpointRow> =>
    db.insertInto('callbackEndpoints').values(row).returningAll().executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string, webhookId: string): Promise<CallbackEndpointRow[]> =>
    db
      .selectFrom('callbackEndpoints')
      .selectAll()
      .where('orgId', '=', orgId)
      .where('webhookId', '=', webhookId)
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .execute(),

  find: (db: Kysely<DB>, orgId: string, webhookId: string, id: string): Promise<CallbackEndpointRow | undefined> =>
    db
      .selectFrom('callbackEndpoints')
      .selectAll()
      .where('orgId', '=', orgId)
      .where('webhookId', '=', webhookId)
      .where('id', '=', id)
      .executeTakeFirst(),

  update: (db: Kysely<DB>, id: string, changes: Updateable<CallbackEndpointsTable>): Promise<CallbackEndpointRow | undefined> =>
    db
      .updateTable('callbackEndpoints')
      .set({ ...changes, updatedAt: sql<Date>`now()` })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  delete: (db: Kysely<DB>, orgId: string, webhookId: string, id: string) =>
    db
      .deleteFrom('callbackEndpoints')
      .where('orgId', '=', orgId)
      .where('webhookId', '=', webhookId)
      .where('id', '=', id)
      .returning('id')
      .executeTakeFirst(),

  /**
   * Disables endpoints (a user, 410 Gone, 5 days of failures) and fails what they still had to
   * deliver, in one statement: nothing stays pending for an endpoint nobody sends to.
   */
  disable: async (db: Kysely<DB>, ids: string[], reason: string): Promise<void> => {
    if (ids.length === 0) return;
    await sql`
      with disabled as (
        update callback_endpoints set enabled = false, disabled_reason = ${reason}, disabled_at = now(), updated_at = now()
        where id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)) and enabled
        returning id
      )
      update callback_deliveries set status = 'failed', last_error = ${`endpoint disabled: ${reason}`}, updated_at = now()
      where endpoint_id in (select id from disabled) and status = 'pending'`.execute(db);
  },
};

function callbacksQuery(db: Kysely<DB>, orgId: string) {
  return db
    .selectFrom('callbackDeliveries as d')
    .innerJoin('callbackEndpoints as ep', 'ep.id', 'd.endpointId')
    .where('d.orgId', '=', orgId)
    .select([
      'd.id',
      'd.endpointId as callbackId',
      'ep.url',
      'd.actionId',
      'd.eventType',
      'd.status',
      'd.attemptCount',
      'd.nextAttemptAt',
      'd.lastStatusCode',
      'd.lastError',
      'd.payload',
      'd.createdAt',
      'd.updatedAt',
      'd.seq',
      'ep.enabled as endpointEnabled',
    ]);
}

const requeued = (db: Kysely<DB>) =>
  db
    .updateTable('callbackDeliveries')
    .set({ status: 'pending', attemptCount: 0, nextAttemptAt: sql<Date>`now()`, updatedAt: sql<Date>`now()` })
    .returning('id');

export type ListedCallback = Awaited<ReturnType<ReturnType<typeof callbacksQuery>['execute']>>[number];

export const callbacksRepo = {
  find: (db: Kysely<DB>, orgId: string, id: string) => callbacksQuery(db, orgId).where('d.id', '=', id).executeTakeFirst(),

  forAction: (db: Kysely<DB>, orgId: string, actionId: string) =>
    callbacksQuery(db, orgId).where('d.actionId', '=', actionId).orderBy('d.seq').execute(),

  forEndpoint: (
    db: Kysely<DB>,
    orgId: string,
    endpointId: string,
    status: CallbackDeliveryStatus | undefined,
    limit: number,
    after?: Cursor,
  ) =>
    callbacksQuery(db, orgId)
      .where('d.endpointId', '=', endpointId)
      .$if(status !== undefined, (q) => q.where('d.status', '=', status!))
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 'd.createdAt', 'd.id')))
      .orderBy('d.createdAt', 'desc')
      .orderBy('d.id', 'desc')
      .limit(limit + 1)
      .execute(),

  attemptsOf: (db: Kysely<DB>, deliveryIds: string[]) =>
    deliveryIds.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('callbackAttempts')
          .select(['deliveryId', 'attemptedAt', 'durationMs', 'statusCode', 'error', 'responseBody'])
          .where('deliveryId', 'in', deliveryIds)
          .orderBy('attemptedAt')
          .execute(),

  /** Sends a callback again from the start of the schedule, due now. */
  requeue: (db: Kysely<DB>, id: string) => requeued(db).where('id', '=', id).execute(),

  /** The same for every failed or dead-lettered callback of an endpoint since `since` (in their order per action). */
  requeueFailedSince: (db: Kysely<DB>, endpointId: string, since: Date) =>
    requeued(db)
      .where('endpointId', '=', endpointId)
      .where('createdAt', '>=', since)
      .where('status', 'in', ['failed', 'dead_lettered'])
      .execute(),
};
