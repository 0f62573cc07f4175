import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { opsRepo } from './ops.repo.ts';

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

/** One read shared by the gauges of one scrape. */
function sharedWithin<T>(ms: number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    if (!last || now - last.at > ms) {
      last = { at: now, value: read() };
      last.value.catch(() => (last = undefined));
    }
    return last.value;
  };
}

/**
 * Readiness per dependency, and the deployment's backlog as gauges read at each scrape: jobs per
 * queue, callbacks waiting, leases held.
 */
export function createOpsService(deps: {
  db: Kysely<DB>;
  pingDatabase: () => Promise<void>;
  /** Present when Redis is configured. */
  pingRedis?: () => Promise<void>;
  jobs: Pick<JobRunner, 'ping' | 'backlog'>;
  /** True once the process is shutting down: load balancers should send it nothing new. */
  draining: () => boolean;
  metrics: Metrics;
  logger: Pick<Logger, 'warn'>;
}) {
  const registers = [deps.metrics.registry];
  const backlog = sharedWithin(1000, () => deps.jobs.backlog());
  const callbackBacklog = sharedWithin(1000, () => opsRepo.callbackBacklog(deps.db));
  new Gauge({
    name: 'job_queue_jobs',
    help: 'Unfinished jobs per queue and state (queued = due now, deferred = waiting for a later time, active = being worked)',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      this.reset();
      for (const row of await backlog()) {
        for (const state of ['queued', 'deferred', 'active'] as const) this.set({ queue: row.queue, state }, row[state]);
      }
    },
  });
  new Gauge({
    name: 'job_queue_oldest_queued_seconds',
    help: 'Age of the oldest job per queue that is due and not yet fetched',
    labelNames: ['queue'] as const,
    registers,
    async collect() {
      this.reset();
      for (const row of await backlog()) this.set({ queue: row.queue }, row.oldestQueuedSeconds);
    },
  });
  new Gauge({
    name: 'callback_backlog',
    help: 'Pending callbacks: due now (in flight or waiting for a slot) and scheduled for a retry',
    labelNames: ['state'] as const,
    registers,
    async collect() {
      const pending = await callbackBacklog();
      this.set({ state: 'due' }, pending.due);
      this.set({ state: 'scheduled' }, pending.scheduled);
    },
  });
  new Gauge({
    name: 'callback_oldest_due_seconds',
    help: 'How long the oldest pending callback has been due',
    registers,
    async collect() {
      this.set((await callbackBacklog()).oldestDueSeconds);
    },
  });
  new Gauge({
    name: 'leases',
    help: 'Leases on running actions and on email notifications being processed: held, and lapsed (their holder died; a worker takes them over)',
    labelNames: ['kind', 'state'] as const,
    registers,
    async collect() {
      for (const [kind, counts] of Object.entries(await opsRepo.leases(deps.db))) {
        this.set({ kind, state: 'held' }, counts.held);
        this.set({ kind, state: 'lapsed' }, counts.lapsed);
      }
    },
  });

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
