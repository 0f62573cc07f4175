import { sql, type Kysely } from 'kysely';

/**
 * The provider's notifications are their own queue: a worker claims the received ones straight from
 * this table, many in one statement, instead of one pg-boss job per notification (written with it,
 * fetched and completed). A notification is ready from its arrival, after its retry time (`retry_at`,
 * a failed attempt's backoff) and once no live lease holds it: the latest of the three, which the
 * ready index orders (GREATEST skips nulls).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table email_notifications add column retry_at timestamptz(3)`.execute(db);
  await sql`
    create index email_notifications_ready on email_notifications
      ((greatest(lease_expires_at, retry_at, received_at))) where status = 'received'
  `.execute(db);
  await sql`drop index email_notifications_unfinished`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`create index email_notifications_unfinished on email_notifications (received_at) where status = 'received'`.execute(
    db,
  );
  await sql`drop index email_notifications_ready`.execute(db);
  await sql`alter table email_notifications drop column retry_at`.execute(db);
}
