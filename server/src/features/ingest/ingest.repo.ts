import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';

/** What ingest reads of a webhook's configuration (the webhooks feature writes it). */
export const ingestRepo = {
  /** The ingest lookup: a webhook by its identifier, with its org's slug. */
  findWebhook: (db: Kysely<DB>, identifier: string) =>
    db
      .selectFrom('webhooks')
      .innerJoin('organizations', 'organizations.id', 'webhooks.orgId')
      .selectAll('webhooks')
      .select(['organizations.slug as orgSlug'])
      .where('webhooks.identifier', '=', identifier)
      .executeTakeFirst(),

  webhookIdentifier: async (db: Kysely<DB>, webhookId: string): Promise<string | undefined> =>
    (await db.selectFrom('webhooks').select('identifier').where('id', '=', webhookId).executeTakeFirst())?.identifier,
};
