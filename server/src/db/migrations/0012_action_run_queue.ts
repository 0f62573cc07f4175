import { sql, type Kysely } from 'kysely';

/**
 * An action is its own run job: workers claim runnable actions straight from this table (queued or
 * approved, oldest first; or running under a lease that lapsed or was given up), as the callback
 * dispatcher claims its outbox. The job queue's insert, fetch and completion per action are gone.
 * Run jobs that an earlier version queued are ignored: their actions are claimed from here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index actions_runnable_idx on actions (updated_at) where status in ('queued', 'approved')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index actions_runnable_idx`.execute(db);
}
