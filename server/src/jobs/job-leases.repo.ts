import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.ts';

/** One attempt of a job: pg-boss counts a job's claims in its retry count. */
export interface LeaseHolder {
  jobId: string;
  attempt: number;
}

/** The leases by which two jobs of one queue and key never run at once, in any process (migrations 0034 and 0035). */
export const jobLeasesRepo = {
  /**
   * Takes `key` for this attempt of a job, for `seconds` (the jobs' heartbeat, which renews it while
   * the attempt still has its job: jobs/one-at-a-time.ts). True when taken: nobody held it, its
   * holder's lease lapsed, or the holder was an earlier attempt of this job (cut off). Two jobs taking
   * it at once: the row's lock makes one wait for the other's statement, and only one is answered. A
   * lease taken over keeps the jobs it put off.
   */
  take: async (db: Kysely<DB>, key: string, holder: LeaseHolder, seconds: number): Promise<boolean> => {
    const expiresAt = sql<Date>`now() + ${seconds}::int * interval '1 second'`;
    const taken = await db
      .insertInto('jobLeases')
      .values({ key, jobId: holder.jobId, attempt: holder.attempt, expiresAt })
      .onConflict((conflict) =>
        conflict
          .column('key')
          .doUpdateSet((eb) => ({
            jobId: eb.ref('excluded.jobId'),
            attempt: eb.ref('excluded.attempt'),
            expiresAt: eb.ref('excluded.expiresAt'),
          }))
          .where((eb) => eb.or([eb('jobLeases.expiresAt', '<=', sql<Date>`now()`), eb('jobLeases.jobId', '=', holder.jobId)])),
      )
      .returning('key')
      .executeTakeFirst();
    return taken !== undefined;
  },

  /**
   * Says that a job was put off by `key`'s lease, so that the lease's release makes it due. False when
   * no live lease holds the key any more (let go, or lapsed): the put-off job need not wait.
   */
  markWaitedOn: async (db: Kysely<DB>, key: string): Promise<boolean> =>
    (await db
      .updateTable('jobLeases')
      .set({ waitedOn: true })
      .where('key', '=', key)
      .where('expiresAt', '>', sql<Date>`now()`)
      .returning('key')
      .executeTakeFirst()) !== undefined,

  /**
   * Lets `key` go, if this attempt still holds it (a later attempt of the job may have taken it over).
   * True when a job was put off by the lease (the caller makes it due).
   */
  release: async (db: Kysely<DB>, key: string, holder: LeaseHolder): Promise<boolean> => {
    const released = await db
      .deleteFrom('jobLeases')
      .where('key', '=', key)
      .where('jobId', '=', holder.jobId)
      .where('attempt', '=', holder.attempt)
      .returning('waitedOn')
      .executeTakeFirst();
    return released?.waitedOn === true;
  },

  /** Deletes the leases lapsed more than `seconds` ago. */
  purgeLapsed: async (db: Kysely<DB>, seconds: number): Promise<void> => {
    await db.deleteFrom('jobLeases').where('expiresAt', '<', sql<Date>`now() - ${seconds}::int * interval '1 second'`).execute();
  },
};
