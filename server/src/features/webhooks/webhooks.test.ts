import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';
import { PREVIOUS_SECRET_GRACE_MS } from '../../lib/crypto.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

describe('webhook configuration', () => {
  it('shows the secret on create only, stores it encrypted, and applies the defaults', async () => {
    const setup = await setupWebhook(app);
    expect(setup.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    expect(setup.webhook).toMatchObject({
      verificationScheme: 'wh',
      rateLimitPerMinute: 100,
      allowRequestOverrides: false,
      enabled: true,
      maxPayloadBytes: 262144,
      eventFilter: [],
      schedule: null,
    });
    const { token, org } = setup.tenant;
    const one = await (await app.request('GET', `/orgs/${org.slug}/webhooks/${setup.webhook.id}`, { token })).text();
    const list = await (await app.request('GET', `/orgs/${org.slug}/webhooks`, { token })).text();
    for (const text of [one, list]) {
      expect(text).not.toContain(setup.secret);
      expect(text).not.toMatch(/secret/i);
    }
    const row = await app.container.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', setup.webhook.id)
      .executeTakeFirstOrThrow();
    expect(row.secretEncrypted).not.toContain(setup.secret.slice(6));
    expect(app.container.box.decrypt(row.secretEncrypted)).toBe(setup.secret);
  });

  it('validates the configuration with clear 400s', async () => {
    const { org, token } = await createTenant(app);
    const bad: Array<Record<string, unknown>> = [
      { name: 'x', rateLimitPerMinute: 1001 },
      { name: 'x', rateLimitPerMinute: 0 },
      { name: 'x', verificationScheme: 'md5' },
      { name: 'x', blockedIps: ['10.0.0.0/33'] },
      { name: 'x', blockedIps: ['not-an-ip'] },
      { name: 'x', schedule: { timezone: 'Mars/Olympus', windows: [{ days: [1], start: '09:00', end: '17:00' }] } },
      { name: 'x', schedule: { timezone: 'UTC', windows: [{ days: [1], start: '17:00', end: '09:00' }] } },
      { name: 'x', actionRuleId: crypto.randomUUID() },
      { name: 'x', runAsUserId: crypto.randomUUID() },
      { name: '' },
    ];
    for (const body of bad) {
      const response = await app.request('POST', `/orgs/${org.slug}/webhooks`, { token, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect((await response.json()).code).toBe('validation_failed');
    }
  });

  it('mints a new unguessable identifier when a webhook is created as, switched to or from, or rotated under `none`', async () => {
    const setup = await setupWebhook(app, { verificationScheme: 'none' });
    const { org, token } = setup.tenant;
    const path = `/orgs/${org.slug}/webhooks/${setup.webhook.id}`;
    const ids = [setup.webhook.webhookIdentifier];
    const rotated = await (await app.request('POST', `${path}/rotate-secret`, { token })).json();
    ids.push(rotated.webhookIdentifier);
    ids.push((await (await app.request('PATCH', path, { token, body: { verificationScheme: 'wh' } })).json()).webhookIdentifier);
    const sameAfterWh = (await (await app.request('PATCH', path, { token, body: { verificationScheme: 'hmac_sha256' } })).json())
      .webhookIdentifier;
    expect(sameAfterWh).toBe(ids[2]);
    ids.push(
      (await (await app.request('PATCH', path, { token, body: { verificationScheme: 'none' } })).json()).webhookIdentifier,
    );
    expect(new Set(ids).size).toBe(4);
    // The old URL stops working at once.
    expect((await app.request('POST', setup.path, { body: { eventType: 'x' } })).status).toBe(404);
    expect((await app.request('POST', `/webhooks/actions/${org.slug}/${ids[3]}`, { body: { eventType: 'x' } })).status).toBe(200);
  });

  it('rotates the secret: the new one works at once, the old one for 24 hours more', async () => {
    const setup = await setupWebhook(app);
    const { org, token } = setup.tenant;
    const response = await app.request('POST', `/orgs/${org.slug}/webhooks/${setup.webhook.id}/rotate-secret`, { token });
    const rotated = await response.json();
    expect(rotated.secret).not.toBe(setup.secret);
    expect(rotated.webhookIdentifier).toBe(setup.webhook.webhookIdentifier);
    expect((await postEvent(app, setup, { eventType: 'x' }, { secret: rotated.secret })).status).toBe(200);
    expect((await postEvent(app, setup, { eventType: 'x' })).status).toBe(200);
    app.clock.advance(PREVIOUS_SECRET_GRACE_MS + 1000);
    try {
      const now = Math.floor(app.clock.now().getTime() / 1000);
      expect((await postEvent(app, setup, { eventType: 'x' }, { nowSeconds: now })).status).toBe(401);
      expect((await postEvent(app, setup, { eventType: 'x' }, { secret: rotated.secret, nowSeconds: now })).status).toBe(200);
    } finally {
      app.clock.reset();
    }
  });

  it('updates and deletes; a changed setting applies to the next delivery', async () => {
    const setup = await setupWebhook(app);
    const { org, token } = setup.tenant;
    const path = `/orgs/${org.slug}/webhooks/${setup.webhook.id}`;
    expect((await postEvent(app, setup, { eventType: 'x' })).status).toBe(200);
    const patched = await (
      await app.request('PATCH', path, { token, body: { eventFilter: ['order.*'], rateLimitPerMinute: 1000 } })
    ).json();
    expect(patched).toMatchObject({ eventFilter: ['order.*'], rateLimitPerMinute: 1000 });
    const skipped = await postEvent(app, setup, { eventType: 'invoice.paid' });
    expect(skipped.status).toBe(202);
    expect(await skipped.json()).toMatchObject({ success: true, skipped: true, reason: 'event_type_filtered' });
    expect((await app.request('PATCH', path, { token, body: {} })).status).toBe(400);
    expect((await app.request('DELETE', path, { token })).status).toBe(204);
    expect((await app.request('GET', path, { token })).status).toBe(404);
    expect((await postEvent(app, setup, { eventType: 'order.created' })).status).toBe(404);
  });

  it("keeps tenants apart: another org's admin gets 404 on every webhook route, a Guest 403", async () => {
    const setup = await setupWebhook(app);
    const intruder = await createTenant(app);
    const base = `/orgs/${setup.tenant.org.slug}/webhooks`;
    const own = `/orgs/${intruder.org.slug}/webhooks/${setup.webhook.id}`;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', base],
      ['POST', base, { name: 'x' }],
      ['GET', `${base}/${setup.webhook.id}`],
      ['PATCH', `${base}/${setup.webhook.id}`, { enabled: false }],
      ['DELETE', `${base}/${setup.webhook.id}`],
      ['POST', `${base}/${setup.webhook.id}/rotate-secret`],
      ['POST', `${base}/${setup.webhook.id}/test`, {}],
      ['GET', own],
      ['PATCH', own, { enabled: false }],
      ['POST', `${own}/rotate-secret`],
    ];
    for (const [method, path, body] of attempts) {
      const response = await app.request(method, path, { token: intruder.token, body });
      expect(response.status, `${method} ${path}`).toBe(404);
    }
    const guest = await createUser(app, { org: setup.tenant.org.slug });
    expect((await app.request('GET', base, { token: await signIn(app, guest) })).status).toBe(403);
    expect((await postEvent(app, setup, { eventType: 'still.works' })).status).toBe(200);
  });
});

describe('agents and action rules', () => {
  it('lists the tools agents can be given, to members of the org only', async () => {
    const tenant = await createTenant(app);
    const outsider = await createTenant(app);
    const guest = await createUser(app, { role: 'Guest', org: tenant.org.slug });
    const listed = await app.request('GET', `/orgs/${tenant.org.slug}/tools`, { token: tenant.token });
    expect(listed.status).toBe(200);
    const { tools } = await listed.json();
    expect(tools.map((tool: { name: string }) => tool.name)).toEqual(expect.arrayContaining(['generateDocument', 'sendEmail']));
    expect(tools.every((tool: { description: string }) => tool.description.length > 0)).toBe(true);
    expect((await app.request('GET', `/orgs/${tenant.org.slug}/tools`)).status).toBe(401);
    expect((await app.request('GET', `/orgs/${tenant.org.slug}/tools`, { token: outsider.token })).status).toBe(404);
    expect((await app.request('GET', `/orgs/${tenant.org.slug}/tools`, { token: await signIn(app, guest) })).status).toBe(200);
  });

  it('supports create, list, get, patch and delete, scoped to the org', async () => {
    const { org, token } = await createTenant(app);
    const other = await createTenant(app);
    const agent = await (
      await app.request('POST', `/orgs/${org.slug}/agents`, {
        token,
        body: { name: 'Writer', instructions: 'Write.', model: 'gpt-test', tools: ['generateDocument'] },
      })
    ).json();
    expect(agent).toMatchObject({ name: 'Writer', model: 'gpt-test', tools: ['generateDocument'] });
    const rule = await app.request('POST', `/orgs/${org.slug}/action-rules`, {
      token,
      body: { name: 'R', agentId: agent.id, approvalRules: { generateDocument: 'ask', sendEmail: 'agent' } },
    });
    expect(rule.status).toBe(201);
    const ruleBody = await rule.json();
    expect(ruleBody.approvalRules).toEqual({ generateDocument: 'ask', sendEmail: 'agent' });
    expect(
      (
        await app.request('POST', `/orgs/${org.slug}/action-rules`, {
          token,
          body: { name: 'R', approvalRules: { x: 'sometimes' } },
        })
      ).status,
    ).toBe(400);
    expect(
      (await app.request('POST', `/orgs/${org.slug}/action-rules`, { token, body: { name: 'R', agentId: crypto.randomUUID() } }))
        .status,
    ).toBe(400);
    expect(
      (await app.request('PATCH', `/orgs/${org.slug}/agents/${agent.id}`, { token, body: { name: 'Renamed' } })).status,
    ).toBe(200);
    expect((await (await app.request('GET', `/orgs/${org.slug}/agents`, { token })).json()).agents).toHaveLength(1);
    expect((await app.request('GET', `/orgs/${other.org.slug}/agents/${agent.id}`, { token: other.token })).status).toBe(404);
    expect((await app.request('GET', `/orgs/${org.slug}/action-rules/${ruleBody.id}`, { token: other.token })).status).toBe(404);
    expect((await app.request('DELETE', `/orgs/${org.slug}/action-rules/${ruleBody.id}`, { token })).status).toBe(204);
    expect((await app.request('DELETE', `/orgs/${org.slug}/agents/${agent.id}`, { token })).status).toBe(204);
    expect((await app.request('GET', `/orgs/${org.slug}/agents/${agent.id}`, { token })).status).toBe(404);
  });

  it('refuses an agent with a tool this server does not have (400 naming the known tools), on create and on change', async () => {
    const { org, token } = await createTenant(app);
    const created = await app.request('POST', `/orgs/${org.slug}/agents`, {
      token,
      body: { name: 'Typo', tools: ['generateDocument', 'sendEmal'] },
    });
    expect(created.status).toBe(400);
    expect(await created.json()).toEqual({
      error: 'body/tools: unknown tool "sendEmal"; the tools are: generateDocument, sendEmail',
      code: 'validation_failed',
    });
    const agent = await (
      await app.request('POST', `/orgs/${org.slug}/agents`, { token, body: { name: 'Fine', tools: ['generateDocument'] } })
    ).json();
    expect(
      (await app.request('PATCH', `/orgs/${org.slug}/agents/${agent.id}`, { token, body: { tools: ['nope'] } })).status,
    ).toBe(400);
    expect((await (await app.request('GET', `/orgs/${org.slug}/agents/${agent.id}`, { token })).json()).tools).toEqual([
      'generateDocument',
    ]);
  });
});
