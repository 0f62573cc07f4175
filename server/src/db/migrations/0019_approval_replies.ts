import { sql, type Kysely } from 'kysely';

/**
 * Replies to approval emails waiting for the reply job, as a closed state of their own: the job
 * compared the message's status detail (a sentence users see) before. A reply stored as waiting by
 * an earlier version is carried over.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table approval_replies (
      message_id uuid primary key references email_messages (id) on delete cascade,
      org_id uuid not null references organizations (id) on delete cascade,
      state text not null check (state in ('waiting', 'read')),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );
    insert into approval_replies (message_id, org_id, state)
      select id, org_id, 'waiting' from email_messages
      where direction = 'inbound' and status_detail = 'an answer to an approval email: to be read as a decision';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table approval_replies;`.execute(db);
}
