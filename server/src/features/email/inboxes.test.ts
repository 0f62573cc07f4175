import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let provider: Awaited<ReturnType<typeof startFakeMailProvider>>;
beforeAll(async () => {
  provider = await startFakeMailProvider();
  app = await startTestApp({ MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0' }, { workers: false });
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
});

/** A tenant with an email integration whose provider account has these domains, and an agent. */
async function emailTenant(
  domains = [{ name: 'support.example.com' }, { name: 'pending.example.com', status: 'pending' as const }],
) {
  const tenant = await createTenant(app);
  const apiKey = `re_${crypto.randomUUID()}`;
  provider.addKey(apiKey, { domains });
  const { org, token } = tenant;
  const saved = await app.request('PUT', `/orgs/${org.slug}/email/integration`, {
    token,
    body: { apiKey, fromEmail: 'agents@support.example.com', webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
  });
  expect(saved.status).toBe(200);
  const agent = await (
    await app.request('POST', `/orgs/${org.slug}/agents`, { token, body: { name: 'Support', tools: ['generateDocument'] } })
  ).json();
  const call = (method: string, path: string, body?: unknown, as = token) =>
    app.request(method, `/orgs/${org.slug}/email/inboxes${path}`, { token: as, body });
  return { ...tenant, agentId: agent.id as string, call };
}

let addresses = 0;
const uniqueAddress = (domain = 'support.example.com') => `help-${++addresses}-${crypto.randomUUID().slice(0, 6)}@${domain}`;

describe('inboxes', () => {
  it('creates an inbox on a verified domain (lower-cased), lists, renames and deletes it', async () => {
    const { call } = await emailTenant();
    const address = uniqueAddress();
    const created = await call('POST', '', { emailAddress: address.toUpperCase(), displayName: 'Help desk' });
    expect(created.status).toBe(201);
    const inbox = await created.json();
    expect(inbox).toMatchObject({ id: expect.any(String), emailAddress: address, displayName: 'Help desk', agents: [] });
    expect((await (await call('GET', '')).json()).inboxes.map((row: { id: string }) => row.id)).toEqual([inbox.id]);
    expect(await (await call('PATCH', `/${inbox.id}`, { displayName: 'Support' })).json()).toMatchObject({
      displayName: 'Support',
    });
    expect((await call('PATCH', `/${inbox.id}`, { emailAddress: 'other@support.example.com' })).status).toBe(400);
    expect((await call('DELETE', `/${inbox.id}`)).status).toBe(204);
    expect((await call('GET', `/${inbox.id}`)).status).toBe(404);
  });

  it('refuses an address that another org (or this one) has: 409', async () => {
    const first = await emailTenant();
    const second = await emailTenant();
    const address = uniqueAddress();
    expect((await first.call('POST', '', { emailAddress: address, displayName: 'A' })).status).toBe(201);
    const taken = await second.call('POST', '', { emailAddress: address, displayName: 'B' });
    expect(taken.status).toBe(409);
    expect((await taken.json()).code).toBe('conflict');
  });

  it('answers the documented errors: no integration, domain not verified, unknown domain, bad address', async () => {
    const bare = await createTenant(app);
    const none = await app.request('POST', `/orgs/${bare.org.slug}/email/inboxes`, {
      token: bare.token,
      body: { emailAddress: uniqueAddress(), displayName: 'x' },
    });
    expect({ status: none.status, body: await none.json() }).toEqual({
      status: 409,
      body: { error: 'Email integration not configured', code: 'email_not_configured' },
    });
    const { call } = await emailTenant();
    for (const domain of ['pending.example.com', 'elsewhere.example']) {
      const refused = await call('POST', '', { emailAddress: uniqueAddress(domain), displayName: 'x' });
      expect({ status: refused.status, body: await refused.json() }).toEqual({
        status: 422,
        body: { error: 'Domain is not verified', code: 'domain_not_verified' },
      });
    }
    expect((await call('POST', '', { emailAddress: 'not an address', displayName: 'x' })).status).toBe(400);
    provider.failNextRequests(1, 503);
    const down = await call('POST', '', { emailAddress: uniqueAddress(), displayName: 'x' });
    expect(down.status).toBe(502);
    expect((await down.json()).code).toBe('upstream_unavailable');
    // A sending-only key cannot read domains: the integration needs another key.
    const sendingOnly = await createTenant(app);
    const key = `re_${crypto.randomUUID()}`;
    provider.addKey(key, { restricted: true });
    await app.request('PUT', `/orgs/${sendingOnly.org.slug}/email/integration`, {
      token: sendingOnly.token,
      body: { apiKey: key, fromEmail: 'agents@support.example.com', webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    });
    const refused = await app.request('POST', `/orgs/${sendingOnly.org.slug}/email/inboxes`, {
      token: sendingOnly.token,
      body: { emailAddress: uniqueAddress(), displayName: 'x' },
    });
    expect(refused.status).toBe(409);
    expect((await refused.json()).error).toMatch(/^The domain could not be checked: The API key can only send email/);
  });

  it('answers 400 with { error, code } for an empty body, NUL, a lone surrogate, a huge value or a bad id', async () => {
    const { call } = await emailTenant();
    const inbox = await (await call('POST', '', { emailAddress: uniqueAddress(), displayName: 'Help' })).json();
    const cases: Array<[string, string, unknown]> = [
      ['POST', '', undefined],
      ['POST', '', { emailAddress: 'a\u0000b@support.example.com', displayName: 'x' }],
      ['POST', '', { emailAddress: uniqueAddress(), displayName: '\ud800' }],
      ['POST', '', { emailAddress: uniqueAddress(), displayName: 'x'.repeat(10_000) }],
      ['PATCH', `/${inbox.id}`, undefined],
      ['POST', `/${inbox.id}/agents`, undefined],
      ['POST', `/${inbox.id}/agents`, { agentId: 'not-a-uuid' }],
      // How the admins are told: only the two channels, as a list.
      ['POST', `/${inbox.id}/agents`, { agentId: crypto.randomUUID(), notify: ['sms'] }],
      ['POST', `/${inbox.id}/agents`, { agentId: crypto.randomUUID(), notify: 'email' }],
      ['POST', `/${inbox.id}/agents`, { agentId: crypto.randomUUID(), notify: ['email\u0000'] }],
      ['POST', `/${inbox.id}/agents`, { agentId: crypto.randomUUID(), notify: Array(11).fill('email') }],
      ['POST', `/${inbox.id}/agents`, { agentId: crypto.randomUUID(), notify: [['email']] }],
      ['GET', '/not-a-uuid', undefined],
      ['DELETE', `/${inbox.id}/agents/not-a-uuid`, undefined],
    ];
    for (const [method, path, body] of cases) {
      const response = await call(method, path, body);
      const answer = await response.json();
      expect({ method, path, status: response.status, code: answer.code, error: typeof answer.error }).toEqual({
        method,
        path,
        status: 400,
        code: 'validation_failed',
        error: 'string',
      });
    }
    expect((await (await call('GET', '')).json()).inboxes).toHaveLength(1);
  });

  it("assigns agents: one primary at most (a new one demotes the old), run as the assigner; the agent must be the org's", async () => {
    const { call, agentId, org, token, admin } = await emailTenant();
    const other = await (await app.request('POST', `/orgs/${org.slug}/agents`, { token, body: { name: 'Sales' } })).json();
    const inbox = await (await call('POST', '', { emailAddress: uniqueAddress(), displayName: 'Help' })).json();

    const first = await call('POST', `/${inbox.id}/agents`, { agentId, isPrimary: true, autoRespond: true });
    expect(first.status).toBe(201);
    expect(await first.json()).toMatchObject({
      agentId,
      isPrimary: true,
      autoRespond: true,
      approvalRules: null,
      notify: [],
      assignedByUserId: admin.id,
    });
    const second = await call('POST', `/${inbox.id}/agents`, {
      agentId: other.id,
      isPrimary: true,
      autoRespond: false,
      approvalRules: { sendEmail: 'ask' },
    });
    expect(second.status).toBe(201);
    const { agents } = await (await call('GET', `/${inbox.id}/agents`)).json();
    expect(agents.map((row: { agentId: string; isPrimary: boolean }) => [row.agentId, row.isPrimary])).toEqual([
      [other.id, true],
      [agentId, false],
    ]);
    expect(agents[0].approvalRules).toEqual({ sendEmail: 'ask' });

    expect((await call('POST', `/${inbox.id}/agents`, { agentId, isPrimary: false, autoRespond: true })).status).toBe(409);
    const foreign = await emailTenant();
    expect(
      (await call('POST', `/${inbox.id}/agents`, { agentId: foreign.agentId, isPrimary: false, autoRespond: true })).status,
    ).toBe(404);
    expect((await call('POST', `/${inbox.id}/agents`, { agentId, approvalRules: { 'bad name!': 'allow' } })).status).toBe(400);

    expect((await call('DELETE', `/${inbox.id}/agents/${agentId}`)).status).toBe(204);
    expect((await call('DELETE', `/${inbox.id}/agents/${agentId}`)).status).toBe(404);
    expect((await (await call('GET', `/${inbox.id}`)).json()).agents).toHaveLength(1);
  });

  it("keeps inboxes inside their org: another org's admin gets 404 everywhere, a guest 403", async () => {
    const owner = await emailTenant();
    const inbox = await (await owner.call('POST', '', { emailAddress: uniqueAddress(), displayName: 'Help' })).json();
    await owner.call('POST', `/${inbox.id}/agents`, { agentId: owner.agentId, isPrimary: true, autoRespond: true });
    const intruder = await emailTenant();
    for (const [method, path, body] of [
      ['GET', `/${inbox.id}`],
      ['PATCH', `/${inbox.id}`, { displayName: 'Mine' }],
      ['DELETE', `/${inbox.id}`],
      ['GET', `/${inbox.id}/agents`],
      ['POST', `/${inbox.id}/agents`, { agentId: intruder.agentId, isPrimary: true, autoRespond: true }],
      ['DELETE', `/${inbox.id}/agents/${owner.agentId}`],
    ] as const) {
      expect((await intruder.call(method, path, body)).status, `${method} ${path}`).toBe(404);
      // Through the owner's org in the URL, a non-member is 404 too.
      const viaOwnerUrl = await app.request(method, `/orgs/${owner.org.slug}/email/inboxes${path}`, {
        token: intruder.token,
        body,
      });
      expect(viaOwnerUrl.status).toBe(404);
    }
    const guest = await createUser(app, { role: 'Guest', org: owner.org.slug });
    expect((await owner.call('GET', '', undefined, await signIn(app, guest))).status).toBe(403);
    expect((await (await owner.call('GET', `/${inbox.id}`)).json()).agents).toHaveLength(1);
  });
});
