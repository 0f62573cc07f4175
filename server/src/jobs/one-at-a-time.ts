import type { Kysely } from 'kysely';
import type { PgBoss, QueueOptions } from 'pg-boss';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.ts';
import type { Metrics } from '../lib/metrics.ts';
import { jobLeasesRepo, type LeaseHolder } from './job-leases.repo.ts';
import type { FetchedJob, JobClaim } from './queue-pump.ts';
import type { QueueName } from './registry.ts';

/**
 * Jobs of a queue with the same key (`oneAtATimePer`) run one at a time across the deployment: the
 * running one holds the key's lease (job-leases.repo.ts), renewed with its heartbeat, and one that
 * finds the key held is put off, to run as a new job once the key is let go.
 */
export function createOneAtATime(deps: {
  boss: Pick<PgBoss, 'send' | 'getDb'>;
  /** pg-boss's schema, quoted. */
  schema: string;
  db: Kysely<DB>;
  logger: Logger;
  metrics: Pick<Metrics, 'jobs'>;
  optionsOf: (name: QueueName) => QueueOptions & { expireInSeconds: number };
  /** How long a lease lasts unrenewed: the jobs' heartbeat, which renews it. */
  heartbeatSeconds: number;
  wake: (name: QueueName) => void;
}) {
  const { boss, schema } = deps;
  /** The leases this process's running jobs hold, by job attempt. */
  const held = new Map<string, { key: string; holder: LeaseHolder }>();
  const attemptOf = (job: { jobId: string; attempt: number }) => `${job.jobId}:${job.attempt}`;

  /**
   * Brings the jobs put off by `key` (the new jobs of `putOff`, by their singleton key) forward: to now,
   * or to when the key's lease lapses, where that is sooner than their time. Only while still unrun: one
   * that has run since and failed waits for its retry's delay, which must not be cut short (pg-boss's
   * `update` moves every job not yet active, retries too). Their retention moves with them, as
   * `update` does it. No lease (let go meanwhile): nothing moves towards its lapse.
   */
  async function bringPutOffJobsForward(name: QueueName, key: string, to: 'now' | 'lapse'): Promise<void> {
    const due = to === 'now' ? `${schema}.job_now()` : 'lease.expires_at';
    await boss.getDb().executeSql(
      `update ${schema}.job job set start_after = ${due}, keep_until = ${due} + (job.keep_until - job.start_after)
         from (select max(expires_at) as expires_at from job_leases where key = $2) lease
        where job.name = $1 and job.singleton_key = $2 and job.state = 'created' and job.start_after > ${due}`,
      [name, key],
    );
  }

  /** Makes the jobs put off by `key` due now, and wakes their workers. */
  async function runPutOffJobs(name: QueueName, key: string): Promise<void> {
    await bringPutOffJobsForward(name, key, 'now');
    deps.wake(name);
  }

  return {
    /**
     * Runs `work` holding `key`, and says so; false, without running it, when another job holds the
     * key. Let go when the work ends, or when this process hands the job back unfinished.
     */
    async holding(name: QueueName, key: string, holder: LeaseHolder, claim: JobClaim, work: () => Promise<void>) {
      if (!(await jobLeasesRepo.take(deps.db, key, holder, deps.heartbeatSeconds))) return false;
      held.set(attemptOf(holder), { key, holder });
      const release = async () => {
        held.delete(attemptOf(holder));
        if (await jobLeasesRepo.release(deps.db, key, holder)) await runPutOffJobs(name, key);
      };
      claim.onHandBack(release);
      try {
        await work();
        return true;
      } finally {
        // Not the job's failure: the lease lapses unrenewed if it cannot be let go now, and the jobs it
        // put off are due by then anyway.
        await release().catch((error: unknown) =>
          deps.logger.warn({ err: error, key }, 'could not let a job lease go, or make the jobs it put off due'),
        );
      }
    },

    /**
     * A job whose key another job holds runs again later as a new job, and this one completes. Failing
     * it to its retry instead spent one of its retries on every put-off: a job kept waiting long enough
     * died unrun. The new job is due when the holder lets the key go (marked on the lease, so that the
     * release makes it due), at the latest when the holder's lease lapses (a holder that died); coming
     * back every few seconds to look cost a job row each time and up to those seconds of delay. Sent
     * before the mark (due one expiry on, then brought forward to the marked lease's lapse, which each
     * renewal puts off), so that no order of the release and the mark loses the wake; sent before this
     * one completes: cut off between the two, both run, one at a time.
     */
    async putOff(name: QueueName, job: FetchedJob, key: string): Promise<void> {
      const options = deps.optionsOf(name);
      const copy = await boss.send(name, job.data as object, {
        ...options,
        singletonKey: key,
        startAfter: options.expireInSeconds,
      });
      // Let go between the failed take and now: nobody's release will make it due.
      if (!(await jobLeasesRepo.markWaitedOn(deps.db, key))) await runPutOffJobs(name, key);
      else await bringPutOffJobsForward(name, key, 'lapse');
      deps.metrics.jobs.inc({ queue: name, outcome: 'deferred' });
      deps.logger.info(
        { queue: name, jobId: job.id, copy, key },
        'another job of the same key is running: this one runs again as a new job once that one is done',
      );
    },

    /**
     * Renews the leases of `jobs`, whose heartbeat was just seen (their attempts still have them), for
     * another heartbeat; the jobs put off by a renewed lease move with its lapse, so that they do not
     * come due while it is held. One statement for a queue's running jobs.
     */
    async renew(name: QueueName, jobs: FetchedJob[]): Promise<void> {
      const leases = jobs.flatMap((job) => held.get(attemptOf({ jobId: job.id, attempt: job.retryCount })) ?? []);
      if (leases.length === 0) return;
      await boss.getDb().executeSql(
        `with renewed as (
           update job_leases lease set expires_at = now() + $5::int * interval '1 second'
             from unnest($2::text[], $3::uuid[], $4::int[]) as mine(key, job_id, attempt)
            where lease.key = mine.key and lease.job_id = mine.job_id and lease.attempt = mine.attempt
           returning lease.key, lease.expires_at, lease.waited_on)
         update ${schema}.job job
            set start_after = renewed.expires_at, keep_until = renewed.expires_at + (job.keep_until - job.start_after)
           from renewed
          where renewed.waited_on and job.name = $1 and job.singleton_key = renewed.key and job.state = 'created'
            and job.start_after > ${schema}.job_now() and job.start_after < renewed.expires_at`,
        [
          name,
          leases.map((lease) => lease.key),
          leases.map((lease) => lease.holder.jobId),
          leases.map((lease) => lease.holder.attempt),
          deps.heartbeatSeconds,
        ],
      );
    },
  };
}
