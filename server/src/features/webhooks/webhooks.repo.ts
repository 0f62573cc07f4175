import { sql, type Insertable, type Kysely, type Updateable } from 'kysely';
import type { DB, WebhookRow, WebhooksTable } from '../../db/schema.ts';

export const webhooksRepo = {
  insert: (db: Kysely<DB>, webhook: Insertable<WebhooksTable>): Promise<WebhookRow> =>
    db.insertInto('webhooks').values(webhook).returningAll().executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string): Promise<WebhookRow[]> =>
    db.selectFrom('webhooks').selectAll().where('orgId', '=', orgId).orderBy('createdAt', 'desc').orderBy('id', 'desc').execute(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<WebhookRow | undefined> =>
    db.selectFrom('webhooks').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  update: (db: Kysely<DB>, orgId: string, id: string, changes: Updateable<WebhooksTable>): Promise<WebhookRow | undefined> =>
    db
      .updateTable('webhooks')
      .set({ ...changes, updatedAt: sql<Date>`now()` })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  delete: async (db: Kysely<DB>, orgId: string, id: string): Promise<WebhookRow | undefined> =>
    db.deleteFrom('webhooks').where('orgId', '=', orgId).where('id', '=', id).returningAll().executeTakeFirst(),
};
