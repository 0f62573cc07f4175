import { sql, type Kysely } from 'kysely';

/**
 * Which job of a queue holds a key (an action's approval notices), so that two jobs of one key never
 * run at once across processes: the second waits for its retry (jobs/job-leases.repo.ts). A lease lapses
 * with its job's expiry, and a later attempt of the same job takes it over at once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table job_leases (
      key text primary key,
      job_id uuid not null,
      attempt int not null,
      expires_at timestamptz not null
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table job_leases;`.execute(db);
}
