import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { expect } from 'vitest';
import { startCallbackReceiver, type ReceivedCallback } from './callback-receiver.ts';
import { startFakeModel } from './fake-model.ts';
import { startTestApp, type TestApp } from './test-app.ts';
import { postEvent, type WebhookSetup } from './webhooks.ts';

/** A test app with a loopback model and a loopback callback receiver (close it in afterAll). */
export async function startCallbackStack(env: Parameters<typeof startTestApp>[0] = {}) {
  const model = await startFakeModel();
  const receiver = await startCallbackReceiver();
  const app = await startTestApp({ ...model.env, ...env });
  return {
    app,
    model,
    receiver,
    async close() {
      await app.close();
      await receiver.close();
      await model.close();
    },
  };
}

export const auth = (setup: WebhookSetup) => ({ token: setup.tenant.token, org: setup.tenant.org.slug });

/** Adds a callback endpoint to the setup's webhook through the API; returns it with its secret. */
export async function addCallback(
  app: TestApp,
  setup: WebhookSetup,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string; [key: string]: any }> {
  const response = await app.request('POST', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks`, {
    token: setup.tenant.token,
    body,
  });
  if (response.status !== 201) throw new Error(`callback not created: ${response.status} ${await response.text()}`);
  const created = await response.json();
  return { ...created.callback, secret: created.secret };
}

/** Verifies a received callback with the standardwebhooks library, as a customer would; returns its event. */
export function verifyWithLibrary(secret: string, callback: ReceivedCallback) {
  const headers = Object.fromEntries(Object.entries(callback.headers).map(([name, value]) => [name, String(value)]));
  const event = new Webhook(secret).verify(callback.body, headers);
  // The spec's wh-* names carry the same values.
  expect(callback.headers['wh-id']).toBe(callback.headers['webhook-id']);
  expect(callback.headers['wh-timestamp']).toBe(callback.headers['webhook-timestamp']);
  expect(callback.headers['wh-signature']).toBe(callback.headers['webhook-signature']);
  return event as { type: string; timestamp: string; data: Record<string, any> };
}

/** Posts an event; returns the id of the action it created. */
export async function runEvent(app: TestApp, setup: WebhookSetup, payload: Record<string, unknown> = {}): Promise<string> {
  const response = await postEvent(app, setup, {
    eventType: 'order.created',
    externalId: randomUUID(),
    data: { order_id: 42 },
    ...payload,
  });
  expect(response.status).toBe(200);
  return (await response.json()).actionId as string;
}

/** Approves the action's one staged tool call through the API. */
export async function approveStaged(app: TestApp, setup: WebhookSetup, actionId: string): Promise<void> {
  const { approvals } = await (
    await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals`, { token: setup.tenant.token })
  ).json();
  const call = approvals.find((candidate: { actionId: string }) => candidate.actionId === actionId);
  const response = await app.request(
    'POST',
    `/orgs/${setup.tenant.org.slug}/actions/${actionId}/tool-calls/${call.toolCallId}/approve`,
    {
      token: setup.tenant.token,
    },
  );
  expect(response.status).toBe(200);
}
