import { sql, type Kysely } from 'kysely';

/**
 * The sendEmail messages still `sending` (a few at most), by when they last changed: the job
 * `email.settle-abandoned-sends` looks for those that nothing is left to send, every ten minutes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index email_messages_sending_calls on email_messages (updated_at)
    where status = 'sending' and tool_call_id is not null;`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index email_messages_sending_calls;`.execute(db);
}
