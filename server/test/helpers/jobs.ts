import { type Kysely, sql } from 'kysely';
import { type ConstructorOptions, PgBoss } from 'pg-boss';
import pino from 'pino';
import type { DB } from '../../src/db/schema.ts';
import { createJobRunner } from '../../src/jobs/job-runner.ts';
import { createMetrics, type Metrics } from '../../src/lib/metrics.ts';
import { createProcessBus, type ProcessBus } from '../../src/lib/process-bus.ts';
import type { TestApp } from './test-app.ts';

/** The jobs of a queue whose payload names `actionId`, oldest first: where each stands in pg-boss. */
export const jobsOfAction = async (db: Kysely<DB>, queue: string, actionId: string) =>
  (
    await sql<{ id: string; state: string; retryCount: number; retryLimit: number; later: boolean }>`
      select id, state, retry_count as "retryCount", retry_limit as "retryLimit", start_after > now() as later
        from pgboss.job where name = ${queue} and data->>'actionId' = ${actionId}
       order by created_on`.execute(db)
  ).rows;

/** The grace a test's runner gives its running jobs at a stop (what SHUTDOWN_GRACE_SECONDS gives a server's): short. */
export const STOP_GRACE_MS = 1_000;

export type StartRunnerArgs = [
  beforeJobStatement?: (text: string, values?: unknown[]) => Promise<void>,
  bossOptions?: Partial<ConstructorOptions>,
  runnerOptions?: { metrics?: Metrics; abandonAfterMs?: number; bus?: ProcessBus; pollMs?: number },
];

/**
 * A job runner of its own on the app's database (an app started without workers works no jobs),
 * finding jobs by a quick poll (or every `pollMs`), hearing the wake-ups of its own process only (or
 * those `bus` carries), its jobs' heartbeat pg-boss's shortest (10 s); `beforeJobStatement`
 * runs before each of pg-boss's statements is sent (a statement it throws at is not).
 */
export async function startJobRunner(
  app: TestApp,
  ...[beforeJobStatement, bossOptions = {}, runnerOptions = {}]: StartRunnerArgs
) {
  const { jobsOptions } = app.container.database;
  const jobsDb = jobsOptions.db!;
  const db = beforeJobStatement
    ? {
        executeSql: async (text: string, values?: unknown[]) => {
          await beforeJobStatement(text, values);
          return jobsDb.executeSql(text, values);
        },
      }
    : jobsDb;
  const runner = createJobRunner({
    boss: { ...jobsOptions, db, ...bossOptions },
    db: app.container.db,
    logger: pino({ level: 'silent' }),
    metrics: runnerOptions.metrics ?? createMetrics(),
    bus: runnerOptions.bus ?? createProcessBus({ logger: pino({ level: 'silent' }) }),
    pollMs: runnerOptions.pollMs ?? 100,
    heartbeatSeconds: 10,
    abandonAfterMs: runnerOptions.abandonAfterMs,
  });
  await runner.start();
  return runner;
}

/**
 * Fails a job's current attempt from another pg-boss, as its monitor fails a job past its expiry or
 * whose heartbeat went stale in another process: the attempt running it no longer has it.
 */
export async function failElsewhere(app: TestApp, queue: string, jobId: string): Promise<void> {
  const other = new PgBoss({ ...app.container.database.jobsOptions, supervise: false, schedule: false });
  other.on('error', () => {});
  await other.start();
  try {
    await other.fail(queue, jobId, { message: 'job timed out' });
  } finally {
    await other.stop({ graceful: false, close: false });
  }
}
