import { PgBoss, fromKysely, type Db, type ConstructorOptions, type QueueOptions } from 'pg-boss';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import type { Logger } from 'pino';
import { jobQueues, type JobHandlers, type JobMeta, type JobPayload, type QueueName } from './registry.ts';
import type { Metrics } from '../lib/metrics.ts';
import { createQueuePump, type FetchedJob, type JobClaim, type QueuePump } from './queue-pump.ts';
import { jobsTopic, type ProcessBus } from '../lib/process-bus.ts';
import { afterCommit } from '../db/after-commit.ts';
import { createOneAtATime } from './one-at-a-time.ts';

export interface JobRunner {
  start(): Promise<void>;
  /** Starts a worker per queue (up to its concurrency in jobs at once); a process that only serves HTTP never calls this. */
  work(handlers: JobHandlers, options?: { concurrency?: Partial<Record<QueueName, number>> }): Promise<void>;
  /**
   * Enqueues a job, and wakes the queue's workers in every process once it is visible. With `trx`, the
   * job commits or rolls back with that transaction, which must be opened by db/after-commit.ts's
   * `transaction` (unless the job is for later: `startAfter`), so that its workers are woken when it commits.
   */
  enqueue<Q extends QueueName>(
    queue: Q,
    payload: JobPayload<Q>,
    options?: { trx?: Kysely<DB>; startAfter?: Date },
  ): Promise<string | null>;
  /** Whether a job of the queue whose payload holds `data` is still to run, or running (not completed, failed or cancelled). */
  unfinished<Q extends QueueName>(queue: Q, data: Partial<JobPayload<Q>>): Promise<boolean>;
  /** Throws unless the queue is started and its tables answer. */
  ping(): Promise<void>;
  /** Per queue, jobs waiting now (and the oldest one's age), waiting for a later time, and being worked. */
  backlog(): Promise<QueueBacklog[]>;
  /** Keys held by running jobs (`oneAtATimePer`), and lapsed ones whose job is not finished (its retry takes them over). */
  leases(): Promise<{ held: number; lapsed: number }>;
  /** Stops working: running jobs get `graceMs` to finish, then are handed back to run again at once (queue-pump.ts). */
  stop(graceMs: number): Promise<void>;
}

export interface QueueBacklog {
  queue: string;
  queued: number;
  deferred: number;
  active: number;
  oldestQueuedSeconds: number;
}

export function createJobRunner(deps: {
  boss: ConstructorOptions;
  /** The service's database, which holds the job leases (the same one as pg-boss's). */
  db: Kysely<DB>;
  logger: Logger;
  metrics: Metrics;
  /** Carries wake-ups to the workers of other processes (coalesced NOTIFYs); the poll is only the fallback. */
  bus: Pick<ProcessBus, 'signal' | 'subscribe'>;
  /** How often an idle worker looks for jobs nobody woke it for (scheduled retries, a lost wake-up). */
  pollMs: number;
  /**
   * How long a running job may go without its worker's heartbeat before pg-boss's monitor fails it to
   * its retry (its worker died): at least 10 s (pg-boss's floor). Every job is sent with it.
   */
  heartbeatSeconds: number;
  /** How long a job's handler has to stop once its signal is aborted (queue-pump.ts; 10 s unless given). */
  abandonAfterMs?: number;
}): JobRunner {
  const boss = new PgBoss({ ...deps.boss, schedule: true, supervise: true });
  const schema = `"${(deps.boss.schema ?? 'pgboss').replaceAll('"', '""')}"`;
  const pumps = new Map<QueueName, QueuePump>();
  /**
   * When each running job of this process started. Whichever settles it first records its outcome and
   * duration: its handler's end, or the pump giving it up or handing it back at a stop (queue-pump.ts),
   * whose handler's late end then records nothing.
   */
  const running = new WeakMap<FetchedJob, number>();
  const settle = (queue: QueueName, job: FetchedJob, outcome?: 'completed' | 'failed' | 'abandoned' | 'handed_back') => {
    const started = running.get(job);
    if (started === undefined) return;
    running.delete(job);
    if (outcome) deps.metrics.jobs.inc({ queue, outcome });
    deps.metrics.jobDuration.observe({ queue }, (performance.now() - started) / 1000);
  };
  // One mechanism for every queue: this process's workers hear the signal at once, other processes' within the bus's window.
  const wake = (queue: QueueName) => deps.bus.signal(jobsTopic(queue));
  let started = false;
  let poller: NodeJS.Timeout | undefined;
  let polling = false;
  boss.on('error', (error) => deps.logger.error({ err: error }, 'job queue error'));
  const optionsOf = (name: QueueName): QueueOptions & { expireInSeconds: number } => ({
    ...jobQueues[name].options,
    heartbeatSeconds: deps.heartbeatSeconds,
  });
  const { db, logger, metrics, heartbeatSeconds } = deps;
  const oneAtATime = createOneAtATime({ boss, schema, db, logger, metrics, heartbeatSeconds, optionsOf, wake });

  /**
   * The fallback for jobs nobody woke a worker for (a retry or a delayed job come due, a lost wake-up):
   * one statement for every queue this process works, on pg-boss's index of waiting jobs, and a fetch
   * only where jobs are due. Each queue polling on its own cost as many statements and wake-ups.
   */
  async function pollDueQueues(): Promise<void> {
    if (polling || pumps.size === 0) return;
    polling = true;
    try {
      const { rows } = await boss.getDb().executeSql(
        `select distinct name from ${schema}.job
           where name = any($1) and state < 'active' and not blocked and start_after <= ${schema}.job_now()`,
        [[...pumps.keys()]],
      );
      for (const { name } of rows as Array<{ name: QueueName }>) pumps.get(name)?.wake();
    } catch (error) {
      deps.logger.error({ err: error }, 'could not look for due jobs');
    } finally {
      polling = false;
    }
  }

  return {
    async start() {
      await boss.start();
      const stored = new Map((await boss.getQueues()).map((queue) => [queue.name, { ...queue } as Record<string, unknown>]));
      for (const name of Object.keys(jobQueues) as QueueName[]) {
        const options = optionsOf(name);
        const queue = stored.get(name);
        if (!queue) await boss.createQueue(name, options);
        // A queue made by an earlier build keeps its options (createQueue changes none), and its scheduled
        // jobs take them: updated where they differ, so that a start writes nothing when none do.
        else if (Object.entries(options).some(([field, value]) => queue[field] !== value)) await boss.updateQueue(name, options);
        // Fill pg-boss's queue cache now. Otherwise the first send() inside one of our transactions
        // looks the queue up on pg-boss's own connection; on PGlite (one connection, one lock) that
        // waits for the lock the transaction holds, for ever.
        await boss.findJobs(name, { id: '00000000-0000-0000-0000-000000000000' });
      }
      started = true;
    },

    async work(handlers, options = {}) {
      // A queue that left the registry keeps its schedule in pg-boss's table: its jobs would pile up unworked.
      const crons = new Set(Object.entries(jobQueues).flatMap(([name, queue]) => ('cron' in queue ? [name] : [])));
      for (const schedule of await boss.getSchedules())
        if (!crons.has(schedule.name)) await boss.unschedule(schedule.name, schedule.key ?? undefined);
      for (const name of Object.keys(jobQueues) as QueueName[]) {
        const handler = handlers[name] as ((payload: unknown, meta: JobMeta) => Promise<void>) | undefined;
        if (!handler) continue;
        const { payload: payloadSchema } = jobQueues[name];
        const oneAtATimePer = (jobQueues[name] as { oneAtATimePer?: string }).oneAtATimePer;
        const run = async (job: FetchedJob, claim: JobClaim) => {
          running.set(job, performance.now());
          let outcome: 'completed' | 'failed' | undefined;
          try {
            const payload = payloadSchema.parse(job.data);
            const key = oneAtATimePer && `${name}:${String((payload as Record<string, unknown>)[oneAtATimePer])}`;
            // The job's own limit: a job handed back at a stop was allowed one more attempt (queue-pump.ts).
            const lastAttempt = job.retryCount >= job.retryLimit;
            const work = () => handler(payload, { ...claim, jobId: job.id, retryCount: job.retryCount, lastAttempt });
            const holder = { jobId: job.id, attempt: job.retryCount };
            if (!key) await work();
            else if (!(await oneAtATime.holding(name, key, holder, claim, work))) {
              await oneAtATime.putOff(name, job, key);
              return;
            }
            outcome = 'completed';
          } catch (error) {
            outcome = 'failed';
            deps.logger.warn({ err: error, queue: name, jobId: job.id }, 'job failed');
            throw error;
          } finally {
            settle(name, job, outcome); // a job put off has no outcome of its own, only its time
          }
        };
        pumps.set(
          name,
          createQueuePump({
            boss,
            schema,
            name,
            concurrency: options.concurrency?.[name] ?? 1,
            heartbeatSeconds: deps.heartbeatSeconds,
            run,
            onHeartbeat: (jobs) => oneAtATime.renew(name, jobs),
            abandonAfterMs: deps.abandonAfterMs,
            onAbandon: (job) => settle(name, job, 'abandoned'),
            onHandedBack: (job) => settle(name, job, 'handed_back'),
            logger: deps.logger,
          }),
        );
        deps.bus.subscribe(jobsTopic(name), () => pumps.get(name)?.wake());
        const cron = (jobQueues[name] as { cron?: string }).cron;
        if (cron) await boss.schedule(name, cron, {}, { tz: 'UTC' });
      }
      poller ??= setInterval(pollDueQueues, deps.pollMs);
      poller.unref();
    },

    async enqueue(queue, payload, options = {}) {
      if (!started) throw new Error('The job runner is not started');
      const data = jobQueues[queue].payload.parse(payload);
      const db: Db | undefined = options.trx ? fromKysely(options.trx) : undefined;
      const id = await boss.send(queue, data, { ...optionsOf(queue), db, startAfter: options.startAfter });
      // Workers fetch now instead of at their next poll, once the job is visible (a job for later: its poll).
      if (!options.trx) wake(queue);
      else if (!options.startAfter && !afterCommit(options.trx, () => wake(queue)))
        throw new Error(`A job of ${queue} enqueued in a transaction that wakes nobody when it commits`);
      return id;
    },

    async unfinished(queue, data) {
      const jobs = await boss.findJobs(queue, { data });
      return jobs.some((job) => job.state === 'created' || job.state === 'retry' || job.state === 'active');
    },

    async ping() {
      if (!started) throw new Error('the job queue is not started');
      await boss.getDb().executeSql(`select 1 from ${schema}.queue limit 1`);
    },

    async backlog() {
      // Unfinished jobs only: the states before 'completed' (pg-boss's indexes cover them).
      const { rows } = await boss.getDb().executeSql(
        `select name as queue,
           count(*) filter (where state < 'active' and start_after <= now())::int as queued,
           count(*) filter (where state < 'active' and start_after > now())::int as deferred,
           count(*) filter (where state = 'active')::int as active,
           coalesce(extract(epoch from now() - min(start_after) filter (where state < 'active' and start_after <= now())),
             0)::float8 as "oldestQueuedSeconds"
         from ${schema}.job where state < 'completed' group by name`,
      );
      const found = new Map((rows as QueueBacklog[]).map((row) => [row.queue, row]));
      return Object.keys(jobQueues).map(
        (queue) => found.get(queue) ?? { queue, queued: 0, deferred: 0, active: 0, oldestQueuedSeconds: 0 },
      );
    },

    async leases() {
      // A lapsed lease of a job that died at its last attempt holds nothing back (purged an hour on: job-leases.jobs.ts).
      // The key begins with the queue's name: the job is found by pg-boss's key (name, id).
      const { rows } = await boss.getDb().executeSql(
        `select count(*) filter (where lease.expires_at > now())::int as held,
           count(*) filter (where lease.expires_at <= now() and exists (
             select 1 from ${schema}.job job
             where job.name = split_part(lease.key, ':', 1) and job.id = lease.job_id and job.state < 'completed'))::int as lapsed
         from job_leases lease`,
      );
      const [counts] = rows as Array<{ held: number; lapsed: number }>;
      return counts ?? { held: 0, lapsed: 0 };
    },

    async stop(graceMs) {
      if (!started) return;
      clearInterval(poller);
      poller = undefined;
      // Jobs still running may enqueue (a run handing its action over): the queue stays open for them.
      const handedBack = await Promise.all([...pumps].map(async ([name, pump]) => ({ name, count: await pump.stop(graceMs) })));
      pumps.clear();
      // Workers of other processes take what was handed back now, not at their next poll.
      for (const { name, count } of handedBack) if (count > 0) wake(name);
      started = false;
      await boss.stop({ graceful: true, timeout: 10_000, close: true });
    },
  };
}
