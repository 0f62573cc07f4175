import { randomUUID } from 'node:crypto';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../test/helpers/eventually.ts';
import { jobsOfAction, startJobRunner } from '../../test/helpers/jobs.ts';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';
import { jobQueues } from './registry.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RUN_WORKERS: 'false' }, { workers: false });
});
afterAll(async () => app?.close());

const queue = 'approvals.slack-update';

describe('job heartbeats', () => {
  it("a job whose worker died runs again once its heartbeat stops, long before its expiry; a live worker's long job is left to run", async () => {
    const { expireInSeconds } = jobQueues[queue].options;
    const [orphaned, long] = [randomUUID(), randomUUID()];
    let dead = false;
    let endDeadRun: () => void = () => {};
    // Once its job runs, nothing of this runner reaches pg-boss's tables any more: its process died.
    const dying = await startJobRunner(app, async () => {
      if (dead) throw new Error('the process is gone');
    });
    await dying.work({
      [queue]: (payload) => {
        if (payload.actionId !== orphaned) return Promise.resolve();
        dead = true;
        return new Promise<void>((resolve) => {
          endDeadRun = resolve;
        });
      },
    });
    // The other process's pg-boss looks for stale heartbeats every second (its default: every minute).
    const alive = await startJobRunner(app, undefined, { monitorIntervalSeconds: 1, superviseIntervalSeconds: 1 });
    const runs: Array<{ actionId: string; jobId: string; retryCount: number; at: number }> = [];
    try {
      const started = Date.now();
      const job = await dying.enqueue(queue, { actionId: orphaned });
      await eventually('the job running in the process that dies', async () => (dead ? true : undefined));
      await alive.work(
        {
          [queue]: async ({ actionId }, { jobId, retryCount }) => {
            if (actionId !== orphaned && actionId !== long) return;
            const at = Date.now();
            runs.push({ actionId, jobId, retryCount, at });
            // Outlasts its heartbeat by 2 s and more: only its heartbeats keep pg-boss's monitor from failing it.
            if (actionId === long)
              await eventually(
                'the orphaned job run again, 12 s on',
                () => (runs.length === 2 && Date.now() - at > 12_000 ? true : undefined),
                (expireInSeconds - 10) * 1000,
              );
          },
        },
        { concurrency: { [queue]: 2 } },
      );
      await alive.enqueue(queue, { actionId: long });
      await eventually(
        'the orphaned job run again',
        () => runs.find((run) => run.actionId === orphaned),
        (expireInSeconds - 10) * 1000,
      );
      const [longRun, retried] = runs;
      // Its same job, at its next attempt (its dead attempt's lease no obstacle), once its heartbeat was 10 s stale.
      expect(retried).toMatchObject({ jobId: job, retryCount: 1 });
      expect(retried!.at - started).toBeGreaterThan(10_000);
      expect(retried!.at - started).toBeLessThan(expireInSeconds * 1000);
      await eventually('both jobs completed', async () => {
        const jobs = [
          ...(await jobsOfAction(app.container.db, queue, orphaned)),
          ...(await jobsOfAction(app.container.db, queue, long)),
        ];
        return jobs.every((row) => row.state === 'completed') ? jobs : undefined;
      });
      // The live worker's job ran once, at its first attempt, for longer than its heartbeat.
      expect(longRun).toMatchObject({ actionId: long, retryCount: 0 });
      expect(runs).toHaveLength(2);
    } finally {
      endDeadRun();
      await Promise.all([dying.stop(), alive.stop()]);
    }
  }, 120_000);

  it("a running job's signal aborts once its attempt no longer has the job (failed elsewhere, as past its expiry); its retry runs it", async () => {
    const actionId = randomUUID();
    const runner = await startJobRunner(app);
    onTestFinished(() => runner.stop());
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
    // Another process's pg-boss fails it, as its monitor fails a job past its expiry.
    const other = new PgBoss({ ...app.container.database.jobsOptions, supervise: false, schedule: false });
    other.on('error', () => {});
    await other.start();
    try {
      await other.fail(queue, job!, { message: 'job timed out' });
    } finally {
      await other.stop({ graceful: false, close: false });
    }
    await eventually('the retry run', () => (attempts.length === 2 ? true : undefined));
    expect(attempts).toEqual([{ retryCount: 0, aborted: expect.stringContaining('no longer this attempt') }, { retryCount: 1 }]);
    await eventually('the job completed', async () =>
      (await jobsOfAction(app.container.db, queue, actionId))[0]?.state === 'completed' ? true : undefined,
    );
  }, 60_000);
});
