import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../test/helpers/eventually.ts';
import { jobsOfAction, startJobRunner, type StartRunnerArgs, STOP_GRACE_MS } from '../../test/helpers/jobs.ts';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';
import { jobLeaseHandlers } from './job-leases.jobs.ts';
import { jobLeasesRepo } from './job-leases.repo.ts';
import { createMetrics } from '../lib/metrics.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RUN_WORKERS: 'false' }, { workers: false });
});
afterAll(async () => app?.close());

const startRunner = (...args: StartRunnerArgs) => startJobRunner(app, ...args);

const stateOf = async (id: string | null) =>
  (
    await sql<{ state: string; output: { message?: string } | null }>`
      select state, output from pgboss.job where id = ${id}`.execute(app.container.db)
  ).rows[0];
const jobsOf = (actionId: string) => jobsOfAction(app.container.db, 'approvals.slack-update', actionId);
const leasesOf = (actionId: string) =>
  app.container.db.selectFrom('jobLeases').select('key').where('key', 'like', `%${actionId}`).execute();

describe('job leases', () => {
  it('are held by one attempt of one job: others wait for its release or its lapse; a later attempt takes over', async () => {
    const { db } = app.container;
    const key = `test:${randomUUID()}`;
    const first = { jobId: randomUUID(), attempt: 0 };
    const other = { jobId: randomUUID(), attempt: 0 };
    expect(await jobLeasesRepo.take(db, key, first, 60)).toBe(true);
    expect(await jobLeasesRepo.take(db, key, other, 60)).toBe(false);
    // The job tried again after its attempt was cut off: its own lease is no obstacle.
    const retried = { ...first, attempt: 1 };
    expect(await jobLeasesRepo.take(db, key, retried, 60)).toBe(true);
    // The cut-off attempt, ending late, does not let go of its retry's lease.
    await jobLeasesRepo.release(db, key, first);
    expect(await jobLeasesRepo.take(db, key, other, 60)).toBe(false);
    await jobLeasesRepo.release(db, key, retried);
    expect(await jobLeasesRepo.take(db, key, other, 0)).toBe(true);
    // A lease past its time (its holder died) is taken over.
    expect(await jobLeasesRepo.take(db, key, first, 60)).toBe(true);
  });

  it("say who put a job off: the holder's release answers true once, and a lease taken over keeps it", async () => {
    const { db } = app.container;
    const key = `test:${randomUUID()}`;
    const holder = { jobId: randomUUID(), attempt: 0 };
    // Nobody holds the key, or its lease lapsed: nothing to wait for.
    expect(await jobLeasesRepo.markWaitedOn(db, key)).toBe(false);
    await jobLeasesRepo.take(db, key, holder, 0);
    expect(await jobLeasesRepo.markWaitedOn(db, key)).toBe(false);
    // Held: marked; the holder's later attempt takes it over with the mark.
    await jobLeasesRepo.take(db, key, holder, 60);
    expect(await jobLeasesRepo.markWaitedOn(db, key)).toBe(true);
    const retried = { ...holder, attempt: 1 };
    await jobLeasesRepo.take(db, key, retried, 60);
    expect(await jobLeasesRepo.release(db, key, holder)).toBe(false);
    expect(await jobLeasesRepo.release(db, key, retried)).toBe(true);
    // A new lease of the key starts unmarked.
    await jobLeasesRepo.take(db, key, holder, 60);
    expect(await jobLeasesRepo.release(db, key, holder)).toBe(false);
  });

  it('two jobs of one key never run at once, in any slot: the second is put off, to run as a new job once the first is done', async () => {
    const runner = await startRunner();
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    const busy = new Map<string, number>();
    const overlaps: string[] = [];
    const runs: string[] = [];
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const [held, free] = [randomUUID(), randomUUID()];
    await runner.work(
      {
        'approvals.slack-update': async ({ actionId }) => {
          if ((busy.get(actionId) ?? 0) > 0) overlaps.push(actionId);
          busy.set(actionId, (busy.get(actionId) ?? 0) + 1);
          runs.push(actionId);
          if (actionId === held && runs.filter((id) => id === held).length === 1) await gate;
          busy.set(actionId, busy.get(actionId)! - 1);
        },
      },
      { concurrency: { 'approvals.slack-update': 3 } },
    );
    const first = await runner.enqueue('approvals.slack-update', { actionId: held });
    await eventually('the first job running', async () => (runs.includes(held) ? true : undefined));
    const second = await runner.enqueue('approvals.slack-update', { actionId: held });
    await runner.enqueue('approvals.slack-update', { actionId: free });
    // Another key runs beside the held one; the same key's second job is put off, not run.
    await eventually('the other key run', async () => (runs.includes(free) ? true : undefined));
    // Put off: it completes unrun, and a new job of its payload waits, with every retry left (a put-off
    // spends none: it is no failure), for the first to let the key go: it is due when the first's lease
    // lapses (its holder dead), not before, so it does not come back to look while the key is held.
    await eventually('the second job put off', async () => ((await stateOf(second))?.state === 'completed' ? true : undefined));
    const [, , copy] = await jobsOf(held);
    expect(copy).toMatchObject({ state: 'created', retryCount: 0, retryLimit: 5, later: true });
    const { rows: due } = await sql<{ atLapse: boolean }>`
      select start_after = (select expires_at from job_leases where key = ${`approvals.slack-update:${held}`}) as "atLapse"
        from pgboss.job where id = ${copy!.id}`.execute(app.container.db);
    expect(due).toEqual([{ atLapse: true }]);
    expect(runs.filter((id) => id === held)).toHaveLength(1);

    // The first's release makes it due.
    openGate();
    await eventually('the first job completed', async () => ((await stateOf(first))?.state === 'completed' ? true : undefined));
    await eventually('the put-off job run', async () => ((await stateOf(copy!.id))?.state === 'completed' ? true : undefined));
    expect((await jobsOf(held)).map((job) => job.id)).toEqual([first, second, copy!.id]);
    expect(runs.filter((id) => id === held)).toHaveLength(2);
    expect(overlaps).toEqual([]);
    // Both let go.
    expect(await leasesOf(held)).toEqual([]);
  });

  it('a job put off by a holder that died runs once its lease lapses, not one expiry after the put-off', async () => {
    const { db } = app.container;
    const actionId = randomUUID();
    const runner = await startRunner();
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    const runs: string[] = [];
    await runner.work({
      'approvals.slack-update': async (payload, { jobId }) => {
        if (payload.actionId === actionId) runs.push(jobId);
      },
    });
    // The holder took the key and died: nobody lets it go, its lease lapses in 3 s.
    await jobLeasesRepo.take(db, `approvals.slack-update:${actionId}`, { jobId: randomUUID(), attempt: 0 }, 3);
    const job = await runner.enqueue('approvals.slack-update', { actionId });
    await eventually('the put-off job run', async () => (runs.length === 1 ? true : undefined));
    const [first, copy] = await jobsOf(actionId);
    expect(first?.id).toBe(job);
    expect(runs).toEqual([copy!.id]);
  });

  it('a job put off by a key let go before the put-off could say so on its lease runs at once, not once the lease could lapse', async () => {
    const { db } = app.container;
    const actionId = randomUUID();
    const key = `approvals.slack-update:${actionId}`;
    const holder = { jobId: randomUUID(), attempt: 0 };
    await jobLeasesRepo.take(db, key, holder, 120);
    // The holder lets go between the job's failed take and its mark on the lease: as the new job is sent.
    let letGo = false;
    const runner = await startRunner(async (text, values) => {
      if (letGo || !/insert into/i.test(text) || !JSON.stringify(values ?? []).includes(key)) return;
      letGo = true;
      expect(await jobLeasesRepo.release(db, key, holder)).toBe(false);
    });
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    const runs: string[] = [];
    await runner.work({
      'approvals.slack-update': async (payload, { jobId }) => {
        if (payload.actionId === actionId) runs.push(jobId);
      },
    });
    const job = await runner.enqueue('approvals.slack-update', { actionId });
    await eventually('the put-off job run', async () => (runs.length === 1 ? true : undefined));
    await eventually('the job put off', async () => ((await stateOf(job))?.state === 'completed' ? true : undefined));
    const [first, copy] = await jobsOf(actionId);
    expect(letGo).toBe(true);
    expect(first?.id).toBe(job);
    expect(runs).toEqual([copy!.id]);
  });

  it("a put-off job that has run since and failed keeps its retry's time when the key is let go again", async () => {
    const runner = await startRunner();
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    const actionId = randomUUID();
    const gates = [Promise.withResolvers<void>(), Promise.withResolvers<void>()];
    let runs = 0;
    await runner.work(
      {
        'approvals.notify': async (payload) => {
          if (payload.actionId !== actionId) return;
          runs += 1;
          if (runs === 1) await gates[0]!.promise;
          if (runs === 2) throw new Error('the mail provider is down');
          if (runs === 3) await gates[1]!.promise;
        },
      },
      { concurrency: { 'approvals.notify': 2 } },
    );
    const notifyJobs = () => jobsOfAction(app.container.db, 'approvals.notify', actionId);
    const putOffWhileHeld = async (gate: PromiseWithResolvers<void>) => {
      const job = await runner.enqueue('approvals.notify', { actionId });
      await eventually('the job put off', async () => ((await stateOf(job))?.state === 'completed' ? true : undefined));
      gate.resolve();
    };
    // The first job holds the key; the second is put off, and its new job runs and fails once the first is done.
    await runner.enqueue('approvals.notify', { actionId });
    await eventually('the first job running', async () => (runs === 1 ? true : undefined));
    await putOffWhileHeld(gates[0]!);
    // Its retry backs off for an hour (as a later attempt's would), set as soon as it fails.
    const copy = await eventually('the new job failed, waiting for its retry', async () => {
      const { rows } = await sql<{ id: string }>`
        update pgboss.job set start_after = now() + interval '1 hour'
         where name = 'approvals.notify' and data->>'actionId' = ${actionId} and state = 'retry' returning id`.execute(
        app.container.db,
      );
      return rows[0]?.id;
    });
    expect((await notifyJobs())[2]?.id).toBe(copy);
    // A third job holds the key, a fourth is put off; the third's release makes the fourth's new job due, not the retry.
    await runner.enqueue('approvals.notify', { actionId });
    await eventually('the third job running', async () => (runs === 3 ? true : undefined));
    await putOffWhileHeld(gates[1]!);
    await eventually('the fourth new job run', async () => ((await notifyJobs())[5]?.state === 'completed' ? true : undefined));
    const { rows } = await sql<{ state: string; inAnHour: boolean }>`
      select state, start_after > now() + interval '50 minutes' as "inAnHour" from pgboss.job where id = ${copy}`.execute(
      app.container.db,
    );
    expect(rows).toEqual([{ state: 'retry', inAnHour: true }]);
    expect(runs).toBe(4);
  });

  it('a job handed back by a stopping process lets its lease go and runs again at once elsewhere, spending no retry', async () => {
    const metrics = createMetrics();
    const runner = await startRunner(undefined, undefined, { metrics });
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    onTestFinished(() => openGate());
    let started = false;
    let ended = false;
    await runner.work({
      'approvals.slack-update': async () => {
        started = true;
        await gate;
        ended = true;
      },
    });
    const actionId = randomUUID();
    const job = await runner.enqueue('approvals.slack-update', { actionId });
    await eventually('the job running', async () => (started ? true : undefined));
    expect(await leasesOf(actionId)).toHaveLength(1);
    // The job outlasts the stop's grace (a fifth of a second): it is handed back, its lease let go.
    await runner.stop(200);
    expect((await stateOf(job))?.state).toBe('retry');
    expect(await leasesOf(actionId)).toEqual([]);
    const other = await startRunner();
    onTestFinished(() => other.stop(STOP_GRACE_MS));
    const attempts: Array<{ retryCount: number; lastAttempt: boolean }> = [];
    await other.work({
      'approvals.slack-update': async (payload, { retryCount, lastAttempt }) => {
        if (payload.actionId === actionId) attempts.push({ retryCount, lastAttempt });
      },
    });
    await eventually('the job completed', async () => ((await stateOf(job))?.state === 'completed' ? true : undefined));
    // A new attempt, with all of the queue's retries still ahead of it.
    expect(attempts).toEqual([{ retryCount: 1, lastAttempt: false }]);
    expect((await jobsOf(actionId))[0]).toMatchObject({ retryCount: 1, retryLimit: 6 });
    // Counted by the stopped process as handed back; its handler's late end records nothing.
    const outcomes = async () => (await metrics.jobs.get()).values.map(({ labels, value }) => ({ ...labels, value }));
    expect(await outcomes()).toEqual([{ queue: 'approvals.slack-update', outcome: 'handed_back', value: 1 }]);
    openGate();
    await eventually('the stopped attempt ended', async () => (ended ? true : undefined));
    expect(await outcomes()).toEqual([{ queue: 'approvals.slack-update', outcome: 'handed_back', value: 1 }]);
  }, 8_000);

  it('are counted on /metrics: held, and lapsed while their job is unfinished (its retry takes them over)', async () => {
    const { db, jobs } = app.container;
    const leaseMetrics = async () => {
      const text = await (await app.request('GET', '/metrics')).text();
      const count = (state: string) => Number(text.match(new RegExp(`leases\\{kind="job",state="${state}"\\} (\\d+)`))?.[1]);
      return { held: count('held'), lapsed: count('lapsed') };
    };
    const before = await leaseMetrics();
    expect(before.held).toBeGreaterThanOrEqual(0);
    await jobLeasesRepo.take(db, `approvals.slack-update:${randomUUID()}`, { jobId: randomUUID(), attempt: 0 }, 60);
    // A job waiting for its retry, whose cut-off attempt's lease lapsed.
    const waiting = await jobs.enqueue(
      'approvals.slack-update',
      { actionId: randomUUID() },
      { startAfter: new Date(Date.now() + 3_600_000) },
    );
    await jobLeasesRepo.take(db, `approvals.slack-update:${randomUUID()}`, { jobId: waiting!, attempt: 0 }, 0);
    // Lapsed leases whose jobs are finished or gone (one that died at its last attempt): they hold nothing back.
    const runner = await startRunner();
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    await runner.work({ 'approvals.slack-update': async () => {} });
    const done = await runner.enqueue('approvals.slack-update', { actionId: randomUUID() });
    await eventually('the job completed', async () => ((await stateOf(done))?.state === 'completed' ? true : undefined));
    for (const jobId of [done!, randomUUID()])
      await jobLeasesRepo.take(db, `approvals.slack-update:${randomUUID()}`, { jobId, attempt: 0 }, 0);
    expect(await leaseMetrics()).toEqual({ held: before.held + 1, lapsed: before.lapsed + 1 });
  });

  it('lapsed an hour ago are forgotten by the hourly job; held ones and lately lapsed ones stay', async () => {
    const { db } = app.container;
    const lease = async (seconds: number) => {
      const key = `test:${randomUUID()}`;
      await jobLeasesRepo.take(db, key, { jobId: randomUUID(), attempt: 0 }, seconds);
      return key;
    };
    const [held, lapsedLately, lapsedLongAgo] = [await lease(60), await lease(-60), await lease(-3700)];
    const runner = await startRunner();
    onTestFinished(() => runner.stop(STOP_GRACE_MS));
    await runner.work(jobLeaseHandlers({ db }));
    const purge = await runner.enqueue('jobs.purge-lapsed-leases', {});
    await eventually('the purge done', async () => ((await stateOf(purge))?.state === 'completed' ? true : undefined));
    const left = await db.selectFrom('jobLeases').select('key').where('key', 'in', [held, lapsedLately, lapsedLongAgo]).execute();
    expect(left.map((row) => row.key).sort()).toEqual([held, lapsedLately].sort());
  });
});
