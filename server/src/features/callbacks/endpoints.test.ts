import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { addCallback, runEvent, startCallbackStack } from '../../../test/helpers/callbacks.ts';
import { createUser, signIn } from '../../../test/helpers/factories.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

// This app guards outbound URLs as production does (CALLBACK_ALLOW_PRIVATE_NETWORKS unset).
let stack: Awaited<ReturnType<typeof startCallbackStack>>;
let app: TestApp;
let model: typeof stack.model;
let receiver: typeof stack.receiver;
beforeAll(async () => {
  stack = await startCallbackStack({ CALLBACK_RETRY_SCHEDULE: '60' });
  ({ app, model, receiver } = stack);
  model.script(() => ({ text: 'done' }));
});
afterAll(async () => stack?.close());

const PUBLIC_URL = 'https://93.184.215.14/hooks/agent';
const paths = (setup: WebhookSetup) => {
  const base = `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks`;
  return { base, one: (id: string) => `${base}/${id}` };
};

describe('callback endpoints', () => {
  it('are created, listed, changed and deleted; the secret is shown on create and rotate only', async () => {
    const setup = await setupWebhook(app);
    const { base, one } = paths(setup);
    const { token } = setup.tenant;
    const created = await app.request('POST', base, {
      token,
      body: { url: PUBLIC_URL, description: ' Orders ', events: ['action.completed', 'action.failed', 'action.completed'] },
    });
    expect(created.status).toBe(201);
    const { callback, secret } = await created.json();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(callback).toEqual({
      id: expect.any(String),
      webhookId: setup.webhook.id,
      url: PUBLIC_URL,
      description: 'Orders',
      events: ['action.completed', 'action.failed'],
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const stored = await app.container.db
      .selectFrom('callbackEndpoints')
      .select('secretEncrypted')
      .where('id', '=', callback.id)
      .executeTakeFirstOrThrow();
    expect(stored.secretEncrypted).not.toContain(secret.slice(6));

    expect((await (await app.request('GET', base, { token })).json()).callbacks).toEqual([callback]);
    const disabled = await (await app.request('PATCH', one(callback.id), { token, body: { enabled: false } })).json();
    expect(disabled).toMatchObject({ enabled: false, disabledReason: 'disabled by a user', disabledAt: expect.any(String) });
    const enabled = await (
      await app.request('PATCH', one(callback.id), { token, body: { enabled: true, events: ['action.pending_approval'] } })
    ).json();
    expect(enabled).toMatchObject({
      enabled: true,
      disabledReason: null,
      events: ['action.pending_approval'],
      description: 'Orders',
    });
    const rotated = await app.request('POST', `${one(callback.id)}/rotate-secret`, { token });
    expect(rotated.status).toBe(200);
    expect(JSON.stringify(await (await app.request('GET', one(callback.id), { token })).json())).not.toContain('whsec_');
    expect((await app.request('DELETE', one(callback.id), { token })).status).toBe(204);
    expect((await app.request('GET', one(callback.id), { token })).status).toBe(404);
  });

  it('refuse bad input with a clear 4xx', async () => {
    const setup = await setupWebhook(app);
    const { base, one } = paths(setup);
    const { token } = setup.tenant;
    const cases: Array<[unknown, RegExp]> = [
      [{}, /url/],
      [{ url: 'not a url' }, /url/],
      [{ url: 'ftp://93.184.215.14/x' }, /url/],
      [{ url: PUBLIC_URL, events: [] }, /events/],
      [{ url: PUBLIC_URL, events: ['action.running'] }, /events/],
      [{ url: PUBLIC_URL, enabled: 'yes' }, /enabled/],
    ];
    for (const [body, message] of cases) {
      const response = await app.request('POST', base, { token, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      const error = await response.json();
      expect(error.code).toBe('validation_failed');
      expect(error.error).toMatch(message);
    }
    expect((await app.request('POST', base, { token, body: '{' })).status).toBe(400);
    const { id } = await addCallback(app, setup, { url: PUBLIC_URL });
    expect((await app.request('PATCH', one(id), { token, body: {} })).status).toBe(400);
    expect((await app.request('POST', `${one(id)}/recover`, { token, body: { since: 'yesterday' } })).status).toBe(400);
    expect((await app.request('GET', `${one(id)}/deliveries?status=lost`, { token })).status).toBe(400);
    expect(
      (
        await app.request('POST', `/orgs/${setup.tenant.org.slug}/webhooks/00000000-0000-4000-8000-000000000000/callbacks`, {
          token,
          body: { url: PUBLIC_URL },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request(
          'POST',
          `/orgs/${setup.tenant.org.slug}/callback-deliveries/00000000-0000-4000-8000-000000000000/replay`,
          {
            token,
          },
        )
      ).status,
    ).toBe(404);
    expect((await app.request('GET', one('not-a-uuid'), { token })).status).toBe(400);
  });

  it("belong to their org: another org's admin, a guest and no session get nothing", async () => {
    const setup = await setupWebhook(app);
    const other = await setupWebhook(app);
    const { base, one } = paths(setup);
    const { id } = await addCallback(app, setup, { url: PUBLIC_URL });
    const guest = await createUser(app, { role: 'Guest', org: setup.tenant.org.slug });
    const guestToken = await signIn(app, guest);
    expect((await app.request('GET', base, { token: guestToken })).status).toBe(403);
    expect((await app.request('GET', base)).status).toBe(401);
    // The other org's admin, through its own org in the path and through ours.
    const foreign = `/orgs/${other.tenant.org.slug}/webhooks/${setup.webhook.id}/callbacks`;
    expect((await app.request('GET', foreign, { token: other.tenant.token })).status).toBe(404);
    expect((await app.request('GET', `${foreign}/${id}`, { token: other.tenant.token })).status).toBe(404);
    expect(
      (await app.request('PATCH', `${foreign}/${id}`, { token: other.tenant.token, body: { url: PUBLIC_URL } })).status,
    ).toBe(404);
    expect((await app.request('POST', `${foreign}/${id}/rotate-secret`, { token: other.tenant.token })).status).toBe(404);
    expect((await app.request('DELETE', `${foreign}/${id}`, { token: other.tenant.token })).status).toBe(404);
    expect((await app.request('GET', one(id), { token: other.tenant.token })).status).toBe(404);
    expect(
      (
        await app.request('POST', `/orgs/${other.tenant.org.slug}/webhooks/${other.webhook.id}/callbacks/${id}/recover`, {
          token: other.tenant.token,
          body: { since: new Date().toISOString() },
        })
      ).status,
    ).toBe(404);
    expect((await app.request('GET', one(id), { token: setup.tenant.token })).status).toBe(200);
  });
});

describe('the SSRF guard', () => {
  it('refuses loopback, private, link-local (metadata) and IPv6 loopback addresses, also behind a name, when the endpoint is configured', async () => {
    const setup = await setupWebhook(app);
    const { base, one } = paths(setup);
    const { token } = setup.tenant;
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://10.0.0.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]:8080/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://localhost:8080/x',
      'http://0.0.0.0/x',
      'http://192.168.1.10/x',
      'http://[fd00::1]/x',
      'http://[fec0::1]/x',
      'http://93.184.215.14:0/x',
      'http://[::127.0.0.1]/x',
      'http://[::a9fe:a9fe]/x',
      'http://[64:ff9b::a9fe:a9fe]/x',
      'http://[2002:a9fe:a9fe::]/x',
      'http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/x',
    ]) {
      const response = await app.request('POST', base, { token, body: { url } });
      expect(response.status, url).toBe(400);
      expect((await response.json()).error).toMatch(/not a public address|callbacks go only to public addresses/);
    }
    const { id } = await addCallback(app, setup, { url: PUBLIC_URL });
    expect((await app.request('PATCH', one(id), { token, body: { url: 'http://10.0.0.1/x' } })).status).toBe(400);
  });

  it('refuses them again when connecting: a URL that became private after it was configured gets no request', async () => {
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: PUBLIC_URL, events: ['action.completed'] });
    const second = await addCallback(app, setup, { url: PUBLIC_URL, events: ['action.completed'] });
    // As if DNS now pointed the configured name at an internal address.
    await app.container.db
      .updateTable('callbackEndpoints')
      .set({ url: receiver.url('/internal') })
      .where('id', '=', endpoint.id)
      .execute();
    await app.container.db
      .updateTable('callbackEndpoints')
      .set({ url: receiver.url('/internal').replace('127.0.0.1', 'localhost') })
      .where('id', '=', second.id)
      .execute();
    const actionId = await runEvent(app, setup);
    const callbacks = await eventually('two refused attempts', async () => {
      const row = await (
        await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger/${actionId}`, { token: setup.tenant.token })
      ).json();
      return row.callbacks?.length === 2 &&
        row.callbacks.every((delivery: { attempts: unknown[] }) => delivery.attempts.length === 1)
        ? row.callbacks
        : undefined;
    });
    for (const delivery of callbacks) {
      expect(delivery).toMatchObject({ status: 'pending', attemptCount: 1 });
      expect(delivery.attempts[0]).toMatchObject({
        statusCode: null,
        error: expect.stringMatching(/^(127\.0\.0\.1|localhost resolves to .*, which) is not a public address$/),
      });
    }
    expect(receiver.received).toEqual([]);
  });
});
