import { sql, type Kysely } from 'kysely';

/**
 * What a send adds to a stored outbound message that must not be stored in the clear (an approval
 * email's one-time links), sealed with the server's key while the message is `sending`, and cleared
 * once the provider has answered: a send cut off by a crash is sent again exactly as it was, under
 * the same idempotency key, so that the provider sends it once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table email_messages add column sealed_extras text;`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table email_messages drop column sealed_extras;`.execute(db);
}
