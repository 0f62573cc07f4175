import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import {
  addCallback,
  approveStaged,
  auth,
  runEvent,
  verifyWithLibrary,
  startCallbackStack,
} from '../../../test/helpers/callbacks.ts';
import { documentThenText } from '../../../test/helpers/fake-model.ts';
import { POLL_FOR_DUE_WORK, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';

let stack: Awaited<ReturnType<typeof startCallbackStack>>;
let app: TestApp;
let model: typeof stack.model;
let receiver: typeof stack.receiver;
beforeAll(async () => {
  stack = await startCallbackStack({
    MODEL_MAX_RETRIES: '0',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    CALLBACK_RETRY_SCHEDULE: '1,1,1',
    ...POLL_FOR_DUE_WORK, // an approval's deadline
  });
  ({ app, model, receiver } = stack);
});
afterAll(async () => stack?.close());

const ask = { approvalRules: { generateDocument: 'ask' } };
const arrived = (actionId: string, count: number) =>
  eventually(`${count} callbacks for ${actionId}`, () =>
    receiver.forAction(actionId).length >= count ? receiver.forAction(actionId) : undefined,
  );

describe('lifecycle callbacks', () => {
  it('announce every step an action takes, signed so that the standardwebhooks library verifies them, with what each step is about', async () => {
    model.script(documentThenText({ title: 'Order', content: '# Order' }));
    const setup = await setupWebhook(app, {}, ask);
    const everything = await addCallback(app, setup, { url: receiver.url('/all') });
    const onlyCompleted = await addCallback(app, setup, { url: receiver.url('/completed'), events: ['action.completed'] });
    expect(everything.events).toHaveLength(6);
    expect(everything.secret).toMatch(/^whsec_/);

    // pending_approval -> approved -> completed
    const approvedId = await runEvent(app, setup, { externalId: 'order-1' });
    await waitForAction(app, auth(setup), approvedId, ['pending_approval']);
    await approveStaged(app, setup, approvedId);
    await waitForAction(app, auth(setup), approvedId, ['completed']);
    const [pending, approved, completed] = (await arrived(approvedId, 4))
      .filter((callback) => callback.path === '/all')
      .map((callback) => verifyWithLibrary(everything.secret, callback));
    const identity = {
      actionId: approvedId,
      webhookId: setup.webhook.id,
      webhookIdentifier: setup.webhook.webhookIdentifier,
      externalId: 'order-1',
      eventType: 'order.created',
      eventId: expect.any(String),
      agentVersion: 1, // the agent's version the action runs with
    };
    expect(pending).toEqual({
      type: 'action.pending_approval',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        ...identity,
        status: 'pending_approval',
        toolCall: {
          toolCallId: expect.any(String),
          toolName: 'generateDocument',
          input: { title: 'Order', content: '# Order' },
          expiresAt: expect.any(String),
        },
        toolCalls: [expect.any(Object)],
      },
    });
    expect(approved).toMatchObject({
      type: 'action.approved',
      data: {
        ...identity,
        status: 'approved',
        decision: { toolName: 'generateDocument', decidedBy: setup.tenant.admin.id, decidedAt: expect.any(String) },
      },
    });
    expect(completed).toMatchObject({
      type: 'action.completed',
      data: { ...identity, status: 'completed', result: { text: expect.stringMatching(/^Made /) } },
    });
    const ledger = await waitForAction(app, auth(setup), approvedId, ['completed']);
    expect(pending!.data.eventId).toBe(ledger.eventId);
    expect(ledger.ingressPayload.data).toEqual({ order_id: 42 }); // JSON keeps its own keys
    const onlyOne = receiver.forAction(approvedId).filter((callback) => callback.path === '/completed');
    expect(onlyOne.map((callback) => verifyWithLibrary(onlyCompleted.secret, callback).type)).toEqual(['action.completed']);

    // rejected
    const rejectedId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), rejectedId, ['pending_approval']);
    const { approvals } = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals`, { token: setup.tenant.token })
    ).json();
    await app.request(
      'POST',
      `/orgs/${setup.tenant.org.slug}/actions/${rejectedId}/tool-calls/${approvals[0].toolCallId}/reject`,
      {
        token: setup.tenant.token,
        body: { reason: 'no' },
      },
    );
    const rejected = (await arrived(rejectedId, 2)).map((callback) => verifyWithLibrary(everything.secret, callback));
    expect(rejected.map((event) => event.type)).toEqual(['action.pending_approval', 'action.rejected']);
    expect(rejected[1]!.data).toMatchObject({ status: 'rejected', decision: { reason: 'no' } });

    // failed
    model.script(() => ({ error: { status: 400, message: 'model refuses' } }));
    const failedId = await runEvent(app, setup);
    const [failed] = (await arrived(failedId, 1)).map((callback) => verifyWithLibrary(everything.secret, callback));
    expect(failed).toMatchObject({
      type: 'action.failed',
      data: { status: 'failed', error: expect.stringContaining('model refuses') },
    });
  });

  it('with CALLBACK_ALLOW_PRIVATE_NETWORKS, still never go to a cloud metadata service', async () => {
    const setup = await setupWebhook(app);
    const { token, org } = setup.tenant;
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://[fd00:ec2::254]/',
      'http://[::ffff:169.254.169.254]/',
    ]) {
      const response = await app.request('POST', `/orgs/${org.slug}/webhooks/${setup.webhook.id}/callbacks`, {
        token,
        body: { url },
      });
      expect(response.status, url).toBe(400);
      expect((await response.json()).error).toMatch(/^body\/url: \S+ is a cloud metadata address, never called$/);
    }
    // Pointed there after it was configured: the attempt is refused before it connects.
    const endpoint = await addCallback(app, setup, { url: receiver.url('/meta') });
    await app.container.db
      .updateTable('callbackEndpoints')
      .set({ url: 'http://169.254.169.254/latest/meta-data' })
      .where('id', '=', endpoint.id)
      .execute();
    const actionId = await runEvent(app, setup);
    const attempt = await eventually('a refused attempt', async () => {
      const row = await (await app.request('GET', `/orgs/${org.slug}/ledger/${actionId}`, { token })).json();
      return row.callbacks?.[0]?.attempts?.[0];
    });
    expect(attempt).toMatchObject({ statusCode: null, error: '169.254.169.254 is a cloud metadata address, never called' });
  });

  it('announce an expired approval', async () => {
    model.script(documentThenText({ title: 'Order', content: '# Order' }));
    const setup = await setupWebhook(app, {}, { ...ask, approvalTimeoutSeconds: 1 });
    const endpoint = await addCallback(app, setup, { url: receiver.url('/expiry'), events: ['action.expired'] });
    const actionId = await runEvent(app, setup);
    const [expired] = (await arrived(actionId, 1)).map((callback) => verifyWithLibrary(endpoint.secret, callback));
    expect(expired).toMatchObject({
      type: 'action.expired',
      data: {
        status: 'expired',
        decision: { toolName: 'generateDocument', decidedBy: null, reason: 'not decided before the deadline' },
      },
    });
  });

  it('after a secret rotation, carry signatures with both secrets for 24 hours', async () => {
    model.script(() => ({ text: 'done' }));
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: receiver.url('/rotation'), events: ['action.completed'] });
    const base = `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks/${endpoint.id}`;
    const rotated = await (await app.request('POST', `${base}/rotate-secret`, { token: setup.tenant.token })).json();
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const actionId = await runEvent(app, setup);
    const [callback] = await arrived(actionId, 1);
    expect(String(callback!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifyWithLibrary(rotated.secret, callback!).type).toBe('action.completed');
    expect(verifyWithLibrary(endpoint.secret, callback!).type).toBe('action.completed');
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(
        callback!.body,
        callback!.headers as Record<string, string>,
      ),
    ).toThrow();
    // The secret is never shown again.
    const shown = await (await app.request('GET', base, { token: setup.tenant.token })).json();
    expect(JSON.stringify(shown)).not.toContain('whsec_');
  });

  it("keep each action's callbacks in lifecycle order at an endpoint, while many actions run and earlier callbacks are retried", async () => {
    model.script(documentThenText({ title: 'Order', content: '# Order' }));
    const setup = await setupWebhook(app, {}, ask);
    await addCallback(app, setup, { url: receiver.url('/ordered') });
    const seen = new Set<string>();
    // The first attempt of one step per action fails, so that the steps after it must wait for the retry.
    receiver.answer((callback) => {
      if (callback.path !== '/ordered') return {};
      const id = String(callback.headers['webhook-id']);
      const failStep = callback.event.data.externalId.endsWith('0')
        ? 'action.pending_approval'
        : callback.event.data.externalId.endsWith('1')
          ? 'action.approved'
          : null;
      const first = !seen.has(id);
      seen.add(id);
      return { status: callback.event.type === failStep && first ? 500 : 200 };
    });
    try {
      const ids = await Promise.all(
        Array.from({ length: 24 }, (_, index) => runEvent(app, setup, { externalId: `ordered-${index}-${index % 3}` })),
      );
      await Promise.all(
        ids.map(async (actionId) => {
          await waitForAction(app, auth(setup), actionId, ['pending_approval'], 30_000);
          await approveStaged(app, setup, actionId);
        }),
      );
      const lifecycle = ['action.pending_approval', 'action.approved', 'action.completed'];
      for (const actionId of ids) {
        const callbacks = await eventually(
          'the completed callback',
          () => {
            const list = receiver.forAction(actionId).filter((callback) => callback.path === '/ordered');
            return list.some((callback) => callback.event.type === 'action.completed') ? list : undefined;
          },
          30_000,
        );
        // Each arrival's step comes after every earlier step has been answered 2xx.
        let delivered = 0;
        for (const callback of callbacks) {
          const step = lifecycle.indexOf(callback.event.type);
          expect(step).toBe(delivered);
          if (callback.status === 200) delivered++;
        }
        expect(delivered).toBe(3);
      }
      expect(receiver.received.filter((callback) => callback.path === '/ordered' && callback.status === 500)).toHaveLength(16);
    } finally {
      receiver.answer(() => ({}));
    }
  }, 60_000);
});
