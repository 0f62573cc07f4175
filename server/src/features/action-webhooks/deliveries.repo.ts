import type { Insertable, Kysely, Updateable } from 'kysely';
import type { DB, DeliveryRow, WebhookDeliveriesTable } from '../../db/schema.ts';

export const deliveriesRepo = {
  insert: (db: Kysely<DB>, row: Insertable<WebhookDeliveriesTable>) => db.insertInto('webhookDeliveries').values(row).execute(),

  /** Updates only if `attempts` is still what the caller read: false when someone else got there first. */
  updateIfAttempts: async (db: Kysely<DB>, id: string, expectedAttempts: number, changes: Updateable<WebhookDeliveriesTable>): Promise<boolean> =>
    (await db.updateTable('webhookDeliveries').set({ ...changes, updatedAt: new Date() }).where('id', '=', id).where('attempts', '=', expectedAttempts).executeTakeFirst()).numUpdatedRows > 0n,

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<DeliveryRow | undefined> =>
    db.selectFrom('webhookDeliveries').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  findById: (db: Kysely<DB>, id: string): Promise<DeliveryRow | undefined> =>
    db.selectFrom('webhookDeliveries').selectAll().where('id', '=', id).executeTakeFirst(),

  /** Buffered deliveries whose next attempt is due, oldest first. */
  dueIds: async (db: Kysely<DB>, now: Date, limit: number): Promise<string[]> =>
    (await db.selectFrom('webhookDeliveries').select('id').where('status', '=', 'buffered').where('nextAttemptAt', '<=', now).orderBy('nextAttemptAt').limit(limit).execute()).map((row) => row.id),

  /** A wh-id seen before on this webhook within the tolerance is a replay (unique key). */
  rememberMessageId: (db: Kysely<DB>, webhookId: string, messageId: string) =>
    db.insertInto('webhookMessageIds').values({ webhookId, messageId }).execute(),

  forgetMessageIdsBefore: (db: Kysely<DB>, before: Date) =>
    db.deleteFrom('webhookMessageIds').where('receivedAt', '<', before).execute(),
};
