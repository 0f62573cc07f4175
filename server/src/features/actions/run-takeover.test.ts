import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { startFakeModel } from '../../../test/helpers/fake-model.ts';
import { POLL_FOR_DUE_WORK, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';
import { MAX_TAKEOVERS } from './action-runner.ts';
import { claimRunnable } from './lifecycle.ts';

/**
 * The actions table is the run queue: a worker that claimed an action and died leaves it `running`
 * under a lease it no longer renews. Once the lease lapses, a live worker's next claim takes it over.
 */
let serving: TestApp;
let worker: TestApp | undefined;
let model: Awaited<ReturnType<typeof startFakeModel>>;
beforeAll(async () => {
  model = await startFakeModel();
  // Only serves HTTP: the action waits for a worker.
  serving = await startTestApp({ ...model.env }, { workers: false });
});
afterAll(async () => {
  await worker?.close();
  await serving?.close();
  await model?.close();
});

describe('an action claimed by a worker that died', () => {
  it('is taken over by a live worker once its lease lapses, and runs to completion once', async () => {
    const setup = await setupWebhook(serving);
    model.script(() => ({ text: 'done' }));
    const { actionId } = await (await postEvent(serving, setup, { eventType: 'order.created' })).json();
    const auth = { token: setup.tenant.token, org: setup.tenant.org.slug };

    // The dying worker: it claims the action (running, under a 1 s lease) and never runs it.
    expect((await claimRunnable(serving.container.db, 10, 1000)).map((claim) => claim.id)).toEqual([actionId]);
    expect((await waitForAction(serving, auth, actionId, ['running'])).status).toBe('running');
    // While the lease holds, nobody else may claim it.
    expect(await claimRunnable(serving.container.db, 10, 1000)).toEqual([]);

    worker = await startTestApp({ ...model.env, ...POLL_FOR_DUE_WORK }, { shareDatabaseWith: serving });
    const row = await waitForAction(serving, auth, actionId, ['completed', 'failed'], 30_000);
    expect(row.status).toBe('completed');
    expect(model.requests).toHaveLength(1);
    // One `running` event: the takeover continues the run, it does not start another.
    const events = await serving.container.db
      .selectFrom('actionEvents')
      .select('status')
      .where('actionId', '=', actionId)
      .execute();
    expect(events.filter((event) => event.status === 'running')).toHaveLength(1);
    const { takeovers } = await serving.container.db
      .selectFrom('actions')
      .select('takeovers')
      .where('id', '=', actionId)
      .executeTakeFirstOrThrow();
    expect(takeovers).toBe(1);
  });

  // Two transactions at once: PGlite runs one at a time.
  it.runIf(process.env.TEST_DB === 'postgres')(
    'is claimed while another transaction holds the foreign-key lock of a row it inserts that refers to it',
    async () => {
      await worker?.close();
      worker = undefined;
      const setup = await setupWebhook(serving);
      const { actionId } = await (await postEvent(serving, setup, { eventType: 'order.created' })).json();
      const { db } = serving.container;
      const released = Promise.withResolvers<void>();
      const holding = Promise.withResolvers<void>();
      // What an insert's foreign-key check takes on the action, held open (an event of it, recorded meanwhile).
      const other = db.transaction().execute(async (trx) => {
        await sql`select id from actions where id = ${actionId} for key share`.execute(trx);
        holding.resolve();
        await released.promise;
      });
      await holding.promise;
      try {
        expect((await claimRunnable(db, 10, 60_000)).map((claim) => claim.id)).toEqual([actionId]);
      } finally {
        released.resolve();
        await other;
      }
    },
  );

  it(`is failed, not run again, once its runs were cut short more than ${MAX_TAKEOVERS} times`, async () => {
    // No worker while the scene is set: the action stays where this test puts it.
    await worker?.close();
    worker = undefined;
    const setup = await setupWebhook(serving);
    const requestsBefore = model.requests.length;
    const { actionId } = await (await postEvent(serving, setup, { eventType: 'order.created' })).json();
    const auth = { token: setup.tenant.token, org: setup.tenant.org.slug };
    // Its runners died MAX_TAKEOVERS times already, and the last one too (running, lease lapsed).
    await serving.container.db
      .updateTable('actions')
      // Leases are on the database's clock (claimRunnable compares them with now()).
      .set({ status: 'running', takeovers: MAX_TAKEOVERS, leaseExpiresAt: sql<Date>`now() - interval '1 minute'` })
      .where('id', '=', actionId)
      .execute();
    worker = await startTestApp({ ...model.env, ...POLL_FOR_DUE_WORK }, { shareDatabaseWith: serving });
    const row = await waitForAction(serving, auth, actionId, ['completed', 'failed'], 30_000);
    expect(row.status).toBe('failed');
    expect(row.execution.error).toMatch(/cut short 6 times \(its worker process died while running it each time\)/);
    expect(model.requests.length).toBe(requestsBefore);
  });
});
