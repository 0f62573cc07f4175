import { sql, type Insertable, type Kysely, type Updateable } from 'kysely';
import type { DB, DeliveryRow, WebhookDeliveriesTable } from '../../db/schema.ts';

export const deliveriesRepo = {
  insert: (db: Kysely<DB>, row: Insertable<WebhookDeliveriesTable>) => db.insertInto('webhookDeliveries').values(row).execute(),

  /** Updates only if `attempts` is still what the caller read: false when someone else got there first. */
  updateIfAttempts: async (
    db: Kysely<DB>,
    id: string,
    expectedAttempts: number,
    changes: Updateable<WebhookDeliveriesTable>,
  ): Promise<boolean> =>
    (
      await db
        .updateTable('webhookDeliveries')
        .set({ ...changes, updatedAt: sql<Date>`now()` })
        .where('id', '=', id)
        .where('attempts', '=', expectedAttempts)
        .executeTakeFirst()
    ).numUpdatedRows > 0n,

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<DeliveryRow | undefined> =>
    db.selectFrom('webhookDeliveries').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  findById: (db: Kysely<DB>, id: string): Promise<DeliveryRow | undefined> =>
    db.selectFrom('webhookDeliveries').selectAll().where('id', '=', id).executeTakeFirst(),

  /** Buffered deliveries whose next attempt is due, oldest first. */
  dueIds: async (db: Kysely<DB>, now: Date, limit: number): Promise<string[]> =>
    (
      await db
        .selectFrom('webhookDeliveries')
        .select('id')
        .where('status', '=', 'buffered')
        .where('nextAttemptAt', '<=', now)
        .orderBy('nextAttemptAt')
        .limit(limit)
        .execute()
    ).map((row) => row.id),

  /** A message id seen before on this webhook is a retry (unique key). */
  rememberMessageId: (db: Kysely<DB>, webhookId: string, messageId: string) =>
    db.insertInto('webhookMessageIds').values({ webhookId, messageId }).execute(),

  forgetMessageIdsBefore: async (db: Kysely<DB>, before: Date): Promise<number> =>
    Number((await db.deleteFrom('webhookMessageIds').where('receivedAt', '<', before).executeTakeFirst()).numDeletedRows),

  /** The planner's estimate of the message ids kept (a count would scan them all). */
  estimateMessageIds: async (db: Kysely<DB>): Promise<number> =>
    Math.max(
      0,
      Number(
        (
          await sql<{
            estimate: number;
          }>`select reltuples::float8 as estimate from pg_class where relname = 'webhook_message_ids'`.execute(db)
        ).rows[0]?.estimate ?? 0,
      ),
    ),
};
