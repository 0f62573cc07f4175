import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackReceiver } from '../../../test/helpers/callback-receiver.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { startFakeModel } from '../../../test/helpers/fake-model.ts';
import { freePort } from '../../../test/helpers/http.ts';
import {
  apiClient,
  createWebhookThroughApi,
  killServerProcess,
  postSignedEvent,
  serverProcessEnvironment,
  startServerProcess,
} from '../../../test/helpers/server-process.ts';

let model: Awaited<ReturnType<typeof startFakeModel>>;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
beforeAll(async () => {
  model = await startFakeModel();
  model.script(() => ({ text: 'done' }));
  receiver = await startCallbackReceiver();
  environment = await serverProcessEnvironment({
    ...model.env,
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    CALLBACK_RETRY_SCHEDULE: '2,2,2',
  });
});
afterAll(async () => {
  await environment?.cleanup();
  await receiver?.close();
  await model?.close();
});

describe('callbacks across a SIGKILL', () => {
  it('a restart while retries are pending loses nothing: every callback arrives once the receiver recovers', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServerProcess(environment.env, port);
    const credentials = environment.createAdmin();
    let api = await apiClient(base, credentials);
    const webhook = await createWebhookThroughApi(api, { tools: [] });
    await api('POST', `/orgs/acme/webhooks/${webhook.webhook.id}/callbacks`, { url: receiver.url('/restart') });
    receiver.answer(() => ({ status: 503 }));

    const actionIds: string[] = [];
    for (let index = 0; index < 5; index++) {
      actionIds.push(await postSignedEvent(base, webhook, { eventType: 'step', externalId: `restart-${index}`, data: {} }));
    }
    // Every delivery has a recorded failed attempt and waits for its retry.
    for (const actionId of actionIds) {
      await eventually(`a recorded failed attempt for ${actionId}`, async () => {
        const [delivery] = (await api('GET', `/orgs/acme/ledger/${actionId}`)).callbacks ?? [];
        return delivery?.status === 'pending' && delivery.attempts.length === 1 ? true : undefined;
      });
    }

    await killServerProcess(server);
    receiver.answer(() => ({}));
    server = await startServerProcess(environment.env, port);
    api = await apiClient(base, credentials);

    for (const actionId of actionIds) {
      const delivered = await eventually(
        `the callback of ${actionId}`,
        async () => {
          const row = await api('GET', `/orgs/acme/ledger/${actionId}`);
          return row.callbacks?.[0]?.status === 'succeeded' ? row.callbacks[0] : undefined;
        },
        30_000,
      );
      // However many retries failed before the kill (the machine decides), the attempts are 503s
      // then one 200, each recorded, all with the same webhook-id.
      const codes = delivered.attempts.map((attempt: { statusCode: number }) => attempt.statusCode);
      expect(delivered).toMatchObject({ eventType: 'action.completed', attemptCount: codes.length });
      expect(codes).toEqual([...codes.slice(0, -1).map(() => 503), 200]);
      expect(codes.length).toBeGreaterThanOrEqual(2);
      const arrivals = receiver.forAction(actionId);
      expect(arrivals.map((callback) => callback.status)).toEqual(codes);
      expect(new Set(arrivals.map((callback) => callback.headers['webhook-id'])).size).toBe(1);
    }
  }, 120_000);
});
