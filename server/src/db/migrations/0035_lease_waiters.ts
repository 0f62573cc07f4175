import { sql, type Kysely } from 'kysely';

/**
 * Whether a job was put off because of the lease (jobs/job-leases.repo.ts): its holder's release then
 * makes the put-off job due at once, instead of it coming back every few seconds to look.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table job_leases add column waited_on boolean not null default false;`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table job_leases drop column waited_on;`.execute(db);
}
