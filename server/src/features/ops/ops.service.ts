import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { opsRepo } from './ops.repo.ts';

/** One series of a gauge: its labels and value. */
type Series = [Record<string, string>, number];

/** One series per state, labelled `state` (and `labels`), from counts keyed by state. */
const byState = <S extends string>(
  counts: Record<S, number>,
  states: readonly S[],
  labels: Record<string, string> = {},
): Series[] => states.map((state) => [{ ...labels, state }, counts[state]]);

export type DependencyName = 'database' | 'redis' | 'queue';
const CHECK_TIMEOUT_MS = 2000;

/**
 * A check that does not answer within the deadline counts as failing (a probe must not hang). The
 * cause goes to the log only: /readyz is public, and driver errors name hosts and users.
 */
async function check(name: DependencyName, probe: () => Promise<void>, logger: Pick<Logger, 'warn'>): Promise<'ok' | 'failing'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch (error) {
    logger.warn({ err: error, dependency: name }, 'readiness check failed');
    return 'failing';
  } finally {
    clearTimeout(timer);
  }
}

/** One read shared by the gauges of one scrape (prom-client collects them all at once): the read in flight, if any. */
function sharedWhileInFlight<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= read().finally(() => {
      pending = undefined;
    }));
}

/**
 * Readiness per dependency, and the deployment's backlog as gauges read at each scrape: jobs per
 * queue, actions and mail notifications waiting, callbacks waiting, leases held.
 */
export function createOpsService(deps: {
  db: Kysely<DB>;
  pingDatabase: () => Promise<void>;
  /** Present when Redis is configured. */
  pingRedis?: () => Promise<void>;
  jobs: Pick<JobRunner, 'ping' | 'backlog' | 'leases'>;
  /** True once the process is shutting down: load balancers should send it nothing new. */
  draining: () => boolean;
  metrics: Metrics;
  logger: Pick<Logger, 'warn'>;
}) {
  const backlog = sharedWhileInFlight(() => deps.jobs.backlog());
  const callbackBacklog = sharedWhileInFlight(() => opsRepo.callbackBacklog(deps.db));
  /**
   * A gauge whose series are read from the database at each scrape. A failed read leaves the gauge
   * empty for that scrape (its series absent), so that /metrics still answers while the database is down.
   */
  const databaseGauge = (name: string, help: string, labelNames: string[], read: () => Promise<Series[]>) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [deps.metrics.registry],
      async collect() {
        this.reset();
        try {
          for (const [labels, value] of await read()) this.set(labels, value);
        } catch (error) {
          deps.logger.warn({ err: error, metric: name }, 'could not read a metric from the database');
        }
      },
    });
  databaseGauge(
    'job_queue_jobs',
    'Unfinished jobs per queue and state (queued = due now, deferred = waiting for a later time, active = being worked)',
    ['queue', 'state'],
    async () => (await backlog()).flatMap((row) => byState(row, ['queued', 'deferred', 'active'], { queue: row.queue })),
  );
  databaseGauge(
    'job_queue_oldest_queued_seconds',
    'Age of the oldest job per queue that is due and not yet fetched',
    ['queue'],
    async () => (await backlog()).map((row) => [{ queue: row.queue }, row.oldestQueuedSeconds]),
  );
  const runQueue = sharedWhileInFlight(() => opsRepo.runQueue(deps.db));
  databaseGauge(
    'action_runs_waiting',
    'Actions waiting for a runner: queued (new) and approved (to resume)',
    ['state'],
    async () => byState(await runQueue(), ['queued', 'approved']),
  );
  databaseGauge('action_runs_oldest_waiting_seconds', 'How long the longest-waiting runnable action has waited', [], async () => [
    [{}, (await runQueue()).oldestSeconds],
  ]);
  const notificationQueue = sharedWhileInFlight(() => opsRepo.notificationQueue(deps.db));
  databaseGauge(
    'email_notifications_waiting',
    'Mail notifications waiting for a worker: ready (new, or their holder died) and retrying (a failed attempt, backing off)',
    ['state'],
    async () => byState(await notificationQueue(), ['ready', 'retrying']),
  );
  databaseGauge(
    'email_notifications_oldest_waiting_seconds',
    'How long the longest-ready mail notification has waited for a worker',
    [],
    async () => [[{}, (await notificationQueue()).oldestSeconds]],
  );
  databaseGauge(
    'callback_backlog',
    'Pending callbacks: due now (in flight or waiting for a slot) and scheduled for a retry',
    ['state'],
    async () => byState(await callbackBacklog(), ['due', 'scheduled']),
  );
  databaseGauge('callback_oldest_due_seconds', 'How long the oldest pending callback has been due', [], async () => [
    [{}, (await callbackBacklog()).oldestDueSeconds],
  ]);
  databaseGauge(
    'leases',
    'Leases on running actions, on email notifications being processed and on the keys of jobs run one at a time: ' +
      'held, and lapsed (their holder died; a worker takes them over)',
    ['kind', 'state'],
    async () => {
      const [rows, job] = await Promise.all([opsRepo.leases(deps.db), deps.jobs.leases()]);
      return Object.entries({ ...rows, job }).flatMap(([kind, counts]) => byState(counts, ['held', 'lapsed'], { kind }));
    },
  );

  return {
    /** Each dependency's state ('ok' or what fails); ready when every one is ok and the process is not draining. */
    async readiness() {
      const checks: Partial<Record<DependencyName, 'ok' | 'failing'>> = {};
      const [database, redis, queue] = await Promise.all([
        check('database', deps.pingDatabase, deps.logger),
        deps.pingRedis ? check('redis', deps.pingRedis, deps.logger) : undefined,
        check('queue', deps.jobs.ping, deps.logger),
      ]);
      checks.database = database;
      if (redis !== undefined) checks.redis = redis;
      checks.queue = queue;
      const failing = Object.entries(checks)
        .filter(([, state]) => state !== 'ok')
        .map(([name]) => name);
      return { checks, failing, draining: deps.draining() };
    },
  };
}

export type OpsService = ReturnType<typeof createOpsService>;
