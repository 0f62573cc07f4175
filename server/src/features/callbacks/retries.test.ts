import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceiverAnswer } from '../../../test/helpers/callback-receiver.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { addCallback, runEvent, startCallbackStack } from '../../../test/helpers/callbacks.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let stack: Awaited<ReturnType<typeof startCallbackStack>>;
let app: TestApp;
let model: typeof stack.model;
let receiver: typeof stack.receiver;
beforeAll(async () => {
  stack = await startCallbackStack({
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    CALLBACK_RETRY_SCHEDULE: '1,1,1',
    CALLBACK_TIMEOUT_SECONDS: '1',
  });
  ({ app, model, receiver } = stack);
  model.script(() => ({ text: 'done' }));
});
afterAll(async () => stack?.close());

/** A webhook whose actions complete at once, with one endpoint answering as `answers` say, attempt by attempt. */
async function endpointAnswering(path: string, answers: ReceiverAnswer[]) {
  const setup = await setupWebhook(app);
  const endpoint = await addCallback(app, setup, { url: receiver.url(path), events: ['action.completed'] });
  let attempt = 0;
  receiver.answer((callback) => (callback.path === path ? answers[Math.min(attempt++, answers.length - 1)]! : {}));
  return { setup, endpoint };
}

const api = (setup: WebhookSetup) => ({
  endpoint: (id: string) =>
    app
      .request('GET', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks/${id}`, {
        token: setup.tenant.token,
      })
      .then((r) => r.json()),
  deliveries: (id: string) =>
    app
      .request('GET', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks/${id}/deliveries`, {
        token: setup.tenant.token,
      })
      .then((r) => r.json()),
  ledger: (actionId: string) =>
    app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger/${actionId}`, { token: setup.tenant.token }).then((r) => r.json()),
});

/** Waits until the action's one callback delivery reaches a final status; returns it as the ledger shows it. */
const settled = (setup: WebhookSetup, actionId: string, timeoutMs = 15_000) =>
  eventually(
    'a settled callback delivery',
    async () => {
      const [delivery] = (await api(setup).ledger(actionId)).callbacks;
      return delivery && delivery.status !== 'pending' ? delivery : undefined;
    },
    timeoutMs,
  );

const arrivals = (path: string) => receiver.received.filter((callback) => callback.path === path);

describe('delivery attempts', () => {
  it('retry after a 500 with the same webhook-id, and the ledger shows every attempt', async () => {
    const { setup } = await endpointAnswering('/r500', [{ status: 500, body: 'x'.repeat(5000) }, { status: 204 }]);
    const actionId = await runEvent(app, setup);
    const delivery = await settled(setup, actionId);
    expect(delivery).toMatchObject({
      status: 'succeeded',
      eventType: 'action.completed',
      attemptCount: 2,
      lastStatusCode: 204,
      nextAttemptAt: null,
    });
    expect(delivery.attempts).toEqual([
      expect.objectContaining({ statusCode: 500, error: 'HTTP 500', responseBody: 'x'.repeat(1024) }),
      expect.objectContaining({ statusCode: 204, error: null }),
    ]);
    const [first, second] = arrivals('/r500');
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(first!.headers['webhook-id']).toBe(delivery.id);
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(750);
  });

  it('retry after a timeout', async () => {
    const { setup } = await endpointAnswering('/slow', [{ delayMs: 1500 }, {}]);
    const actionId = await runEvent(app, setup);
    const delivery = await settled(setup, actionId);
    expect(delivery.status).toBe('succeeded');
    expect(delivery.attempts[0]).toMatchObject({ statusCode: null, error: 'timed out after 1 s' });
  });

  it('honour Retry-After (within twice the scheduled delay)', async () => {
    const { setup } = await endpointAnswering('/later', [{ status: 429, headers: { 'retry-after': '2' } }, {}]);
    const actionId = await runEvent(app, setup);
    await settled(setup, actionId);
    const [first, second] = arrivals('/later');
    // The schedule says 1 s (+-20%); the receiver asked for 2 s.
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1900);
  });

  it('do not follow a redirect', async () => {
    const { setup } = await endpointAnswering('/moved', [{ status: 302, headers: { location: receiver.url('/elsewhere') } }, {}]);
    const actionId = await runEvent(app, setup);
    const delivery = await settled(setup, actionId);
    expect(delivery.attempts[0]).toMatchObject({
      statusCode: 302,
      error: `redirect to ${receiver.url('/elsewhere')} not followed`,
    });
    expect(arrivals('/elsewhere')).toEqual([]);
  });

  it('stop at 410 Gone: the endpoint is disabled, shows why, and gets nothing more', async () => {
    const { setup, endpoint } = await endpointAnswering('/gone', [{ status: 410 }]);
    const actionId = await runEvent(app, setup);
    expect(await settled(setup, actionId)).toMatchObject({ status: 'failed', attemptCount: 1, lastStatusCode: 410 });
    expect(await api(setup).endpoint(endpoint.id)).toMatchObject({
      enabled: false,
      disabledReason: 'the receiver answered 410 Gone',
      disabledAt: expect.any(String),
    });
    // The next action completes with no callback for the disabled endpoint: the transition that
    // would have written one has committed, so nothing can come later.
    const next = await runEvent(app, setup);
    const completed = await eventually('the next action completed', async () => {
      const row = await api(setup).ledger(next);
      return row.status === 'completed' ? row : undefined;
    });
    expect(completed.callbacks).toEqual([]);
    expect(arrivals('/gone')).toHaveLength(1);
    // Nothing is sent again to a disabled endpoint.
    const [failed] = (await api(setup).ledger(actionId)).callbacks;
    const replay = await app.request('POST', `/orgs/${setup.tenant.org.slug}/callback-deliveries/${failed.id}/replay`, {
      token: setup.tenant.token,
    });
    expect(replay.status).toBe(409);
    expect(await replay.json()).toEqual({ error: 'The callback endpoint is disabled; enable it first', code: 'conflict' });
    const recover = await app.request(
      'POST',
      `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks/${endpoint.id}/recover`,
      { token: setup.tenant.token, body: { since: new Date(0).toISOString() } },
    );
    expect(recover.status).toBe(409);
  });

  it('disable an endpoint that has been failing for 5 days, and show why', async () => {
    const { setup, endpoint } = await endpointAnswering('/failing', [{ status: 500 }]);
    await app.container.db
      .updateTable('callbackEndpoints')
      .set({ failingSince: new Date(Date.now() - 5 * 86_400_000 - 60_000) })
      .where('id', '=', endpoint.id)
      .execute();
    const actionId = await runEvent(app, setup);
    expect(await settled(setup, actionId)).toMatchObject({
      status: 'failed',
      attemptCount: 1,
      lastError: 'endpoint disabled: failing for 5 days',
    });
    expect(await api(setup).endpoint(endpoint.id)).toMatchObject({ enabled: false, disabledReason: 'failing for 5 days' });
  });

  it('dead-letter after the last scheduled retry; recover sends them again; replay sends one again', async () => {
    const { setup, endpoint } = await endpointAnswering('/down', [{ status: 503 }]);
    const since = new Date().toISOString();
    const actionId = await runEvent(app, setup);
    // While it is still being attempted, it is not replayed.
    const pending = await eventually('a pending delivery', async () => {
      const [delivery] = (await api(setup).ledger(actionId)).callbacks;
      return delivery?.status === 'pending' && delivery.attempts.length >= 1 ? delivery : undefined;
    });
    const early = await app.request('POST', `/orgs/${setup.tenant.org.slug}/callback-deliveries/${pending.id}/replay`, {
      token: setup.tenant.token,
    });
    expect(early.status).toBe(409);
    expect((await early.json()).code).toBe('not_replayable');
    const dead = await settled(setup, actionId, 20_000);
    expect(dead).toMatchObject({ status: 'dead_lettered', attemptCount: 4, lastError: 'HTTP 503' });
    expect(arrivals('/down')).toHaveLength(4);
    expect((await api(setup).endpoint(endpoint.id)).failingSince).not.toBeNull();

    receiver.answer(() => ({}));
    const base = `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks/${endpoint.id}`;
    const recovered = await app.request('POST', `${base}/recover`, { token: setup.tenant.token, body: { since } });
    expect(recovered.status).toBe(202);
    expect(await recovered.json()).toEqual({ recovered: 1 });
    const resent = await settled(setup, actionId);
    expect(resent).toMatchObject({ status: 'succeeded', attemptCount: 1 });
    expect(resent.attempts).toHaveLength(5);
    expect((await api(setup).endpoint(endpoint.id)).failingSince).toBeNull();

    const replayed = await app.request('POST', `/orgs/${setup.tenant.org.slug}/callback-deliveries/${dead.id}/replay`, {
      token: setup.tenant.token,
    });
    expect(replayed.status).toBe(202);
    await eventually('the replay', () => (arrivals('/down').length === 6 ? true : undefined));
    expect(new Set(arrivals('/down').map((callback) => callback.headers['webhook-id']))).toEqual(new Set([dead.id]));
    const listed = await api(setup).deliveries(endpoint.id);
    expect(listed.deliveries).toEqual([expect.objectContaining({ id: dead.id, callbackId: endpoint.id, actionId })]);
  }, 30_000);
});
