import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackReceiver } from '../../../test/helpers/callback-receiver.ts';
import { addCallback } from '../../../test/helpers/callbacks.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { actionOf, outbox } from '../../../test/helpers/outbox.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';
import { createGuardedHttpClient } from '../../lib/http-client.ts';
import { createCallbackDispatcher } from './dispatcher.ts';

// A dispatcher of the test's own, with no other running (workers: false) and a poll that never comes
// within a test: what it sends after its first claim, it claims because recording attempts let it.
let app: TestApp;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
beforeAll(async () => {
  receiver = await startCallbackReceiver();
  app = await startTestApp({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }, { workers: false });
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
});

function startDispatcher(concurrency: number) {
  const { db, bus, metrics, tracing, logger, clock, box } = app.container;
  const dispatcher = createCallbackDispatcher({
    db,
    bus,
    metrics,
    tracing,
    logger,
    clock,
    httpClient: createGuardedHttpClient({ allowPrivateNetworks: true, connectTimeoutMs: 5000 }),
    decrypt: (encrypted) => box.decrypt(encrypted),
    options: { concurrency, timeoutMs: 5000, retryScheduleMs: [60_000], pollMs: 3_600_000 },
  });
  dispatcher.start();
  return dispatcher;
}

const arrivedAt = (path: string, count: number) =>
  eventually(`${count} callbacks at ${path}`, () => {
    const arrived = receiver.received.filter((callback) => callback.path === path);
    return arrived.length >= count ? arrived : undefined;
  });

describe('the callback dispatcher', () => {
  it("sends an action's next callback to an endpoint once the one before it is recorded, not at the next poll", async () => {
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: receiver.url('/next') });
    const actionId = await actionOf(app.container.db, setup);
    await outbox(app.container.db, setup, actionId, endpoint.id, 2, 'action.pending_approval');
    await outbox(app.container.db, setup, actionId, endpoint.id, 1, 'action.approved');
    const dispatcher = startDispatcher(10);
    try {
      const arrived = await arrivedAt('/next', 2);
      expect(arrived.map((callback) => callback.event.type)).toEqual(['action.pending_approval', 'action.approved']);
    } finally {
      await dispatcher.stop();
    }
  });

  it('with every slot in flight, claims the rest once the attempts are recorded, not at the next poll', async () => {
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: receiver.url('/slots') });
    for (let i = 0; i < 3; i++)
      await outbox(app.container.db, setup, await actionOf(app.container.db, setup), endpoint.id, 3 - i);
    const dispatcher = startDispatcher(1);
    try {
      await arrivedAt('/slots', 3);
    } finally {
      await dispatcher.stop(); // which records the attempts in flight
    }
    const states = await app.container.db
      .selectFrom('callbackDeliveries')
      .select(['status', 'attemptCount'])
      .where('endpointId', '=', endpoint.id)
      .execute();
    expect(states).toEqual(Array.from({ length: 3 }, () => ({ status: 'succeeded', attemptCount: 1 })));
  });
});
