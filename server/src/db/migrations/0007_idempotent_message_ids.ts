import { sql, type Kysely } from 'kysely';

/**
 * A sender that lost our answer sends the same wh-id again, for as long as its retries last (Svix's
 * about 28 hours). A claim now keeps what answers such a retry: the digest of the body it came with
 * (a different body under the same id is refused), the delivery it became, and the externalId (a
 * duplicate event adds no delivery row; its action is found by the externalId). Claims are purged
 * by age (received_at), hence its index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table webhook_message_ids
      add column body_digest text,
      add column event_id uuid,
      add column external_id text;
    create index webhook_message_ids_received_at_idx on webhook_message_ids (received_at);
  `.execute(db);
}
