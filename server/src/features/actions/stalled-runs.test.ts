import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { startFakeModel } from '../../../test/helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

/**
 * A worker that dies between fetching an action's run job and claiming the action leaves the job
 * `active` in pg-boss with an hour's expiry, and the action `queued`. Another worker hands the job
 * back within a fraction of the action lease, and the action runs.
 */
let serving: TestApp;
let worker: TestApp | undefined;
let model: Awaited<ReturnType<typeof startFakeModel>>;
beforeAll(async () => {
  model = await startFakeModel();
  // Only serves HTTP: the run job waits in the queue for a worker.
  serving = await startTestApp({ ...model.env }, { workers: false });
});
afterAll(async () => {
  await worker?.close();
  await serving?.close();
  await model?.close();
});

describe('a run job fetched by a worker that died before claiming its action', () => {
  it("is handed back and run by a live worker within about a lease, not after the job's hour-long expiry", async () => {
    const setup = await setupWebhook(serving);
    model.script(() => ({ text: 'done' }));
    const response = await postEvent(serving, setup, { eventType: 'order.created' });
    const { actionId } = await response.json();

    // The dying worker: it fetches the job (pg-boss marks it active) and never claims the action.
    const dying = new PgBoss({ ...serving.container.database.jobsOptions, supervise: false, schedule: false });
    dying.on('error', () => {});
    await dying.start();
    const [job] = await dying.fetch<{ actionId: string }>('actions.run');
    expect(job?.data.actionId).toBe(actionId);
    await dying.stop({ graceful: false, close: false });

    const leaseSeconds = 2;
    const started = performance.now();
    worker = await startTestApp({ ...model.env, ACTION_LEASE_SECONDS: String(leaseSeconds) }, { shareDatabaseWith: serving });
    const auth = { token: setup.tenant.token, org: setup.tenant.org.slug };
    const row = await waitForAction(serving, auth, actionId, ['completed', 'failed'], 30_000);
    expect(row.status).toBe('completed');
    // Handed back within 3/4 of a lease, then retried after the queue's 5 s retry delay.
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});
