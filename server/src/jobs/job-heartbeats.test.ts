import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, it, type TestContext } from 'vitest';
import { eventually } from '../../test/helpers/eventually.ts';
import { failElsewhere, jobsOfAction, startJobRunner, STOP_GRACE_MS } from '../../test/helpers/jobs.ts';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';
import { createMetrics } from '../lib/metrics.ts';
import { jobQueues } from './registry.ts';

/**
 * A database of the test's own, whose app runs no workers: the tests run at once (each waits out pg-boss's
 * 10 s heartbeat or a part of it), and a runner of one test must not take another's jobs.
 */
async function ownApp(context: TestContext): Promise<TestApp> {
  const app = await startTestApp({ RUN_WORKERS: 'false' }, { workers: false });
  context.onTestFinished(() => app.close());
  return app;
}

const queue = 'approvals.slack-update';

/**
 * A runner whose process dies once it runs a job of `actionId`: from then on nothing of it reaches
 * pg-boss's tables (its heartbeat neither), and it renews no lease. `end` lets the hung run go.
 */
async function startDyingRunner(app: TestApp, actionId: string) {
  let dead = false;
  let end: () => void = () => {};
  const runner = await startJobRunner(app, async () => {
    if (dead) throw new Error('the process is gone');
  });
  await runner.work({
    [queue]: (payload) => {
      if (payload.actionId !== actionId) return Promise.resolve();
      dead = true;
      return new Promise<void>((resolve) => {
        end = resolve;
      });
    },
  });
  return { runner, isDead: () => dead, end: () => end() };
}

interface Run {
  actionId: string;
  jobId: string;
  retryCount: number;
  at: number;
  endedAt?: number;
}

describe.concurrent('job heartbeats', () => {
  it("a job whose worker died runs again once its heartbeat stops, long before its expiry; a live worker's long job keeps its key", async (context) => {
    const app = await ownApp(context);
    const { expect } = context;
    const { expireInSeconds } = jobQueues[queue].options;
    const [orphaned, long] = [randomUUID(), randomUUID()];
    const dying = await startDyingRunner(app, orphaned);
    // The other process's pg-boss looks for stale heartbeats every second (its default: every minute).
    const alive = await startJobRunner(app, undefined, { monitorIntervalSeconds: 1, superviseIntervalSeconds: 1 });
    const runs: Run[] = [];
    const runsOf = (actionId: string) => runs.filter((run) => run.actionId === actionId);
    try {
      const started = Date.now();
      const job = await dying.runner.enqueue(queue, { actionId: orphaned });
      await eventually('the job running in the process that dies', async () => (dying.isDead() ? true : undefined));
      await alive.work(
        {
          [queue]: async ({ actionId }, { jobId, retryCount }) => {
            if (actionId !== orphaned && actionId !== long) return;
            const run: Run = { actionId, jobId, retryCount, at: Date.now() };
            runs.push(run);
            // The first outlasts its heartbeat by 2 s and more: only its heartbeats keep pg-boss's monitor
            // from failing it, and renew its lease.
            if (actionId === long && runsOf(long).length === 1)
              await eventually(
                'the orphaned job run again, 12 s on',
                () => (runsOf(orphaned).length > 0 && Date.now() - run.at > 12_000 ? true : undefined),
                (expireInSeconds - 10) * 1000,
              );
            run.endedAt = Date.now();
          },
        },
        { concurrency: { [queue]: 3 } },
      );
      await alive.enqueue(queue, { actionId: long });
      await eventually('the long job running', () => (runsOf(long).length === 1 ? true : undefined));
      // Put off while the long job holds its key.
      await alive.enqueue(queue, { actionId: long });
      await eventually('the orphaned job run again', () => runsOf(orphaned)[0], (expireInSeconds - 10) * 1000);
      // Its same job, at its next attempt (its dead attempt's lease no obstacle), once its heartbeat was 10 s stale.
      const [retried] = runsOf(orphaned);
      expect(retried).toMatchObject({ jobId: job, retryCount: 1 });
      expect(retried!.at - started).toBeGreaterThan(10_000);
      expect(retried!.at - started).toBeLessThan(expireInSeconds * 1000);
      await eventually('every job completed', async () => {
        const jobs = [
          ...(await jobsOfAction(app.container.db, queue, orphaned)),
          ...(await jobsOfAction(app.container.db, queue, long)),
        ];
        return jobs.length === 4 && jobs.every((row) => row.state === 'completed') ? jobs : undefined;
      });
      // The live worker's long job ran once, at its first attempt, for longer than its heartbeat (and its
      // lease, renewed); the job put off by it ran after it, not once the lease's first heartbeat was past.
      const [longRun, putOff] = runsOf(long);
      expect(longRun).toMatchObject({ retryCount: 0 });
      expect(putOff!.jobId).not.toBe(longRun!.jobId);
      expect(putOff!.at).toBeGreaterThanOrEqual(longRun!.endedAt!);
      expect(runs).toHaveLength(3);
    } finally {
      dying.end();
      await Promise.all([dying.runner.stop(STOP_GRACE_MS), alive.stop(STOP_GRACE_MS)]);
    }
  }, 120_000);

  it("a job put off by a holder that died runs once the holder's lease goes a heartbeat unrenewed, not at the holder's expiry", async (context) => {
    const app = await ownApp(context);
    const { expect } = context;
    const { expireInSeconds } = jobQueues[queue].options;
    const actionId = randomUUID();
    const dying = await startDyingRunner(app, actionId);
    const alive = await startJobRunner(app);
    const runs: Run[] = [];
    try {
      const job = await dying.runner.enqueue(queue, { actionId });
      await eventually('the job running in the process that dies', async () => (dying.isDead() ? true : undefined));
      const heldFrom = Date.now();
      // Its own retry is a minute and more away (pg-boss's monitor, every minute); the job put off by it is not.
      await alive.work({
        [queue]: async (payload, { jobId, retryCount }) => {
          if (payload.actionId === actionId) runs.push({ actionId, jobId, retryCount, at: Date.now() });
        },
      });
      await alive.enqueue(queue, { actionId });
      const [putOff] = await eventually('the put-off job run', () => (runs.length > 0 ? runs : undefined), 30_000);
      expect(putOff!.jobId).not.toBe(job);
      expect(putOff!.at - heldFrom).toBeLessThan((expireInSeconds * 1000) / 4);
      expect((await jobsOfAction(app.container.db, queue, actionId))[0]).toMatchObject({ id: job, state: 'active' });
    } finally {
      dying.end();
      await Promise.all([dying.runner.stop(STOP_GRACE_MS), alive.stop(STOP_GRACE_MS)]);
    }
  }, 60_000);

  it("a running job's signal aborts once its attempt no longer has the job (failed elsewhere, as past its expiry); its retry runs it", async (context) => {
    const app = await ownApp(context);
    const { expect, onTestFinished } = context;
    const actionId = randomUUID();
    const runner = await startJobRunner(app);
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    const attempts: Array<{ retryCount: number; aborted?: string }> = [];
    await runner.work({
      [queue]: async (payload, { retryCount, signal }) => {
        if (payload.actionId !== actionId) return;
        const attempt: (typeof attempts)[number] = { retryCount };
        attempts.push(attempt);
        if (retryCount > 0) return;
        // Works until told it no longer has the job.
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        attempt.aborted = String(signal.reason);
        signal.throwIfAborted();
      },
    });
    const job = await runner.enqueue(queue, { actionId });
    await eventually('the job running', () => (attempts.length === 1 ? true : undefined));
    await failElsewhere(app, queue, job!);
    await eventually('the retry run', () => (attempts.length === 2 ? true : undefined));
    expect(attempts).toEqual([{ retryCount: 0, aborted: expect.stringContaining('no longer this attempt') }, { retryCount: 1 }]);
    await eventually('the job completed', async () =>
      (await jobsOfAction(app.container.db, queue, actionId))[0]?.state === 'completed' ? true : undefined,
    );
  }, 60_000);

  it('a job whose handler does not stop at its signal counts as abandoned when its slot is freed, and its late end records nothing', async (context) => {
    const app = await ownApp(context);
    const { expect, onTestFinished } = context;
    // A queue that holds no lease per key: the retry runs as soon as it is due, beside the abandoned handler.
    const plain = 'email.lookup-message-id';
    const messageRowId = randomUUID();
    const metrics = createMetrics();
    const runner = await startJobRunner(app, undefined, undefined, { metrics, abandonAfterMs: 100 });
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    let end: () => void = () => {};
    let ended = false;
    const attempts: number[] = [];
    await runner.work({
      [plain]: async (payload, { retryCount }) => {
        if (payload.messageRowId !== messageRowId) return;
        attempts.push(retryCount);
        // The first attempt ignores its signal until the test lets it end.
        if (retryCount > 0) return;
        await new Promise<void>((resolve) => (end = resolve));
        ended = true;
      },
    });
    const outcomes = async () =>
      Object.fromEntries(
        (await metrics.jobs.get()).values
          .filter((value) => value.labels.queue === plain)
          .map((value) => [value.labels.outcome, value.value]),
      );
    const timed = async () =>
      (await metrics.jobDuration.get()).values.find(
        (value) => value.labels.queue === plain && value.metricName === 'job_duration_seconds_count',
      )?.value;
    const job = await runner.enqueue(plain, { messageRowId });
    await eventually('the job running', () => (attempts.length === 1 ? true : undefined));
    await failElsewhere(app, plain, job!);
    await eventually('the job given up, its retry run', () => (attempts.length === 2 ? true : undefined));
    await eventually('the retry completed', async () => ((await outcomes()).completed === 1 ? true : undefined));
    expect(await outcomes()).toEqual({ abandoned: 1, completed: 1 });
    expect(await timed()).toBe(2); // the abandoned attempt's time, up to its slot's release, and the retry's
    end();
    await eventually('the abandoned handler ended', () => (ended ? true : undefined));
    // Its end is not the job's: that was recorded when its slot was freed.
    expect(await outcomes()).toEqual({ abandoned: 1, completed: 1 });
    expect(await timed()).toBe(2);
  }, 60_000);

  it('a start sets the heartbeat on a queue an earlier build made without it, and writes nothing where the options match', async (context) => {
    const app = await ownApp(context);
    const { expect } = context;
    const { db } = app.container;
    const queueRow = async () =>
      (
        await sql<{ heartbeatSeconds: number | null; updatedOn: Date }>`
          select heartbeat_seconds as "heartbeatSeconds", updated_on as "updatedOn" from pgboss.queue
           where name = 'auth.purge-expired'`.execute(db)
      ).rows[0]!;
    await sql`update pgboss.queue set heartbeat_seconds = null where name = 'auth.purge-expired'`.execute(db);
    const first = await startJobRunner(app);
    await first.stop(STOP_GRACE_MS);
    const updated = await queueRow();
    expect(updated.heartbeatSeconds).toBe(10);
    const second = await startJobRunner(app);
    await second.stop(STOP_GRACE_MS);
    expect(await queueRow()).toEqual(updated);
  });
});
