import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let provider: Awaited<ReturnType<typeof startFakeMailProvider>>;
beforeAll(async () => {
  provider = await startFakeMailProvider();
  app = await startTestApp({ MAIL_API_URL: provider.url, MAIL_API_RETRIES: '2' }, { workers: false });
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
});

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
let keys = 0;
/** A new key of the fake provider's account, with these domains. */
function newKey(domains: Parameters<typeof provider.addKey>[1] = {}) {
  const key = `re_${++keys}_${crypto.randomUUID().slice(0, 8)}`;
  provider.addKey(key, domains);
  return key;
}
const integration = (apiKey: string, fromEmail = 'agents@mail.example.com') => ({
  apiKey,
  fromEmail,
  fromName: 'Acme Agents',
  webhookSecret: SECRET,
});

describe('email integration', () => {
  it('saves the integration encrypted, shows hints and the sender domain status, and removes it', async () => {
    const { org, token } = await createTenant(app);
    const base = `/orgs/${org.slug}/email/integration`;
    expect(await (await app.request('GET', base, { token })).json()).toMatchObject({
      configured: false,
      fromEmail: null,
      domain: null,
    });

    const apiKey = newKey({ domains: [{ name: 'mail.example.com', status: 'verified', receiving: true }] });
    const saved = await app.request('PUT', base, { token, body: integration(apiKey, 'Agents@Mail.Example.com') });
    expect(saved.status).toBe(200);
    const body = await saved.json();
    expect(body).toMatchObject({
      configured: true,
      fromEmail: 'agents@mail.example.com',
      fromName: 'Acme Agents',
      apiKeyHint: `...${apiKey.slice(-4)}`,
      webhookSecretHint: `...${SECRET.slice(-4)}`,
      domain: { name: 'mail.example.com', status: 'verified', receiving: true, checkedAt: expect.any(String) },
    });
    expect(JSON.stringify(body)).not.toContain(apiKey);
    expect(JSON.stringify(body)).not.toContain(SECRET);
    const stored = await app.container.db
      .selectFrom('emailIntegrations')
      .selectAll()
      .where('orgId', '=', org.id)
      .executeTakeFirstOrThrow();
    expect(stored.apiKeyEncrypted).not.toContain(apiKey);
    expect(app.container.box.decrypt(stored.webhookSecretEncrypted)).toBe(SECRET);
    expect(await (await app.request('GET', base, { token })).json()).toEqual(body);
    expect(provider.requests.at(-1)).toMatchObject({
      method: 'GET',
      url: '/domains',
      userAgent: expect.stringMatching(/^agent-platform\//),
    });

    expect((await app.request('DELETE', base, { token })).status).toBe(204);
    expect((await (await app.request('GET', base, { token })).json()).configured).toBe(false);
    expect(await (await app.request('DELETE', base, { token })).json()).toEqual({
      error: 'Email integration not found',
      code: 'not_found',
    });
  });

  it('saves an integration whose domain cannot be checked, with the status unknown', async () => {
    const { org, token } = await createTenant(app);
    const saved = await app.request('PUT', `/orgs/${org.slug}/email/integration`, {
      token,
      body: integration(newKey({ restricted: true })),
    });
    expect(saved.status).toBe(200);
    expect((await saved.json()).domain).toEqual({ name: 'mail.example.com', status: null, receiving: null, checkedAt: null });
  });

  it('tests a connection before saving: the key, the domain verified, the domain receiving', async () => {
    const { org, token } = await createTenant(app);
    const test = (body?: unknown) => app.request('POST', `/orgs/${org.slug}/email/integration/test`, { token, body });
    const names = (result: { checks: Array<{ name: string; ok: boolean }> }) =>
      Object.fromEntries(result.checks.map((check) => [check.name, check.ok]));

    const good = await (await test(integration(newKey({ domains: [{ name: 'mail.example.com' }] })))).json();
    expect(good).toEqual({ ok: true, checks: expect.any(Array) });
    expect(names(good)).toEqual({ api_key: true, domain_verified: true, domain_receiving: true });

    const sendingOnly = await (await test(integration(newKey({ restricted: true })))).json();
    expect(sendingOnly.ok).toBe(false);
    expect(sendingOnly.checks[0]).toEqual({ name: 'api_key', ok: false, message: expect.stringMatching(/can only send email/) });

    const pending = await (
      await test(integration(newKey({ domains: [{ name: 'mail.example.com', status: 'pending', receiving: false }] })))
    ).json();
    expect(names(pending)).toEqual({ api_key: true, domain_verified: false, domain_receiving: false });
    expect(pending.checks[1].message).toBe('mail.example.com is pending, not verified');

    const elsewhere = await (await test(integration(newKey({ domains: [{ name: 'other.example' }] })))).json();
    expect(elsewhere.checks[1].message).toMatch(/not a domain of this provider account/);

    const wrongKey = await (await test(integration('re_not_a_key_of_anyone'))).json();
    expect(wrongKey.checks[0]).toEqual({
      name: 'api_key',
      ok: false,
      message: 'The mail provider refused the API key: API key is invalid',
    });

    // Nothing was saved by the tests; without a body, the saved integration is tested.
    expect(await (await test()).json()).toEqual({ error: 'Email integration not configured', code: 'email_not_configured' });
    expect((await test()).status).toBe(409);
    await app.request('PUT', `/orgs/${org.slug}/email/integration`, {
      token,
      body: integration(newKey({ domains: [{ name: 'mail.example.com' }] })),
    });
    expect((await (await test()).json()).ok).toBe(true);
  });

  it('keeps the saved key and secret where a change leaves them out, and says which is missing when none is saved', async () => {
    const { org, token } = await createTenant(app);
    const base = `/orgs/${org.slug}/email/integration`;
    const apiKey = newKey({ domains: [{ name: 'mail.example.com' }] });
    await app.request('PUT', base, { token, body: integration(apiKey) });
    const stored = () =>
      app.container.db.selectFrom('emailIntegrations').selectAll().where('orgId', '=', org.id).executeTakeFirstOrThrow();

    // A new sender alone: the saved key checks its domain, and both secrets stay as they were.
    const renamed = await app.request('PUT', base, {
      token,
      body: { fromEmail: 'support@mail.example.com', fromName: 'Support' },
    });
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({
      fromEmail: 'support@mail.example.com',
      fromName: 'Support',
      apiKeyHint: `...${apiKey.slice(-4)}`,
      webhookSecretHint: `...${SECRET.slice(-4)}`,
      domain: { name: 'mail.example.com', status: 'verified', receiving: true },
    });
    expect(app.container.box.decrypt((await stored()).apiKeyEncrypted)).toBe(apiKey);
    expect(app.container.box.decrypt((await stored()).webhookSecretEncrypted)).toBe(SECRET);

    // A connection test of a new sender, with the saved key.
    const test = await app.request('POST', `${base}/test`, { token, body: { fromEmail: 'agents@other.example' } });
    expect((await test.json()).checks).toEqual([
      { name: 'api_key', ok: true, message: 'The API key is accepted' },
      { name: 'domain_verified', ok: false, message: expect.stringMatching(/^other\.example is not a domain/) },
      { name: 'domain_receiving', ok: false, message: expect.any(String) },
    ]);

    // A new secret, the key kept.
    const newSecret = 'whsec_bmV3IHNlY3JldCBmb3IgdGhlIHRlc3Q=';
    await app.request('PUT', base, { token, body: { fromEmail: 'support@mail.example.com', webhookSecret: newSecret } });
    expect(app.container.box.decrypt((await stored()).webhookSecretEncrypted)).toBe(newSecret);
    expect(app.container.box.decrypt((await stored()).apiKeyEncrypted)).toBe(apiKey);

    // Nothing saved: nothing to keep.
    const other = await createTenant(app);
    const otherBase = `/orgs/${other.org.slug}/email/integration`;
    for (const [method, url, body, missing] of [
      ['PUT', otherBase, { fromEmail: 'a@mail.example.com' }, 'apiKey'],
      ['PUT', otherBase, { fromEmail: 'a@mail.example.com', apiKey: newKey() }, 'webhookSecret'],
      ['POST', `${otherBase}/test`, { fromEmail: 'a@mail.example.com' }, 'apiKey'],
    ] as const) {
      const response = await app.request(method, url, { token: other.token, body });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: `body/${missing}: required: no integration is saved to keep it from`,
        code: 'validation_failed',
      });
    }
    // A test needs the key alone.
    const firstTest = await app.request('POST', `${otherBase}/test`, {
      token: other.token,
      body: { fromEmail: 'a@mail.example.com', apiKey: newKey({ domains: [{ name: 'mail.example.com' }] }) },
    });
    expect((await firstTest.json()).ok).toBe(true);
    expect((await (await app.request('GET', otherBase, { token: other.token })).json()).configured).toBe(false);
  });

  it('retries a provider that answers 429 (after retry-after) or 5xx, and reports one that stays down', async () => {
    const { org, token } = await createTenant(app);
    const test = (body: unknown) => app.request('POST', `/orgs/${org.slug}/email/integration/test`, { token, body });
    const apiKey = newKey({ domains: [{ name: 'mail.example.com' }] });
    provider.failNextRequests(1, 429, { 'retry-after': '0' });
    provider.failNextRequests(1, 503);
    expect((await (await test(integration(apiKey))).json()).ok).toBe(true);
    provider.failNextRequests(3, 500);
    const down = await (await test(integration(apiKey))).json();
    expect(down.checks[0]).toEqual({ name: 'api_key', ok: false, message: 'temporary failure' });
  });

  it('refuses bad input with 400 and says which field, when saving and when testing', async () => {
    const { org, token } = await createTenant(app);
    const base = `/orgs/${org.slug}/email/integration`;
    const put = (body: unknown) => app.request('PUT', base, { token, body });
    const test = (body: unknown) => app.request('POST', `${base}/test`, { token, body });
    // The test takes the integration or nothing (the saved one): a bad field is named as the save names it.
    const missingSender = /^body\/fromEmail: Invalid input: expected string, received undefined$/;
    for (const [body, said, testSays = said] of [
      [{ ...integration(newKey()), fromEmail: 'not an address' }, /^body\/fromEmail: Invalid email address$/],
      [{ ...integration(newKey()), webhookSecret: 'plain-secret' }, /^body\/webhookSecret: the webhook signing secret/],
      [{ ...integration(newKey()), apiKey: '' }, /^body\/apiKey: Too small: expected string to have >=8 characters$/],
      [{ apiKey: newKey() }, missingSender, /^body\/fromEmail: required: the sender to test \(with no body, the saved/],
      [[integration(newKey())], /^body: Invalid input: expected object, received array$/],
    ] as const) {
      for (const [send, expected] of [
        [put, said],
        [test, testSays],
      ] as const) {
        const response = await send(body);
        expect(response.status).toBe(400);
        const refused = await response.json();
        expect(refused.code).toBe('validation_failed');
        expect(refused.error).toMatch(expected);
      }
    }
    expect((await put({ fromEmail: 'a@b.example' })).status).toBe(400);
  });

  it.runIf(process.env.TEST_DB === 'postgres')(
    'a change that keeps the saved key and secret does not undo a removal made while it was saved',
    async () => {
      const { org, token } = await createTenant(app);
      const base = `/orgs/${org.slug}/email/integration`;
      await app.request('PUT', base, { token, body: integration(newKey({ domains: [{ name: 'mail.example.com' }] })) });
      const { db } = app.container;
      const waitingOnLocks = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`.execute(db)
        ).rows[0]!.n;
      // The change has read the saved secrets when the removal, not yet committed, holds the row.
      let changed: Promise<Response> | undefined;
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('emailIntegrations').where('orgId', '=', org.id).execute();
        changed = app.request('PUT', base, { token, body: { fromEmail: 'support@mail.example.com' } });
        await eventually('the change waiting for the row', async () => ((await waitingOnLocks()) === 1 ? true : undefined));
      });
      expect(await (await changed!).json()).toEqual({
        code: 'conflict',
        error:
          'The email integration was removed or its secrets replaced while this change was saved: nothing was saved; send it again',
      });
      expect((await (await app.request('GET', base, { token })).json()).configured).toBe(false);
    },
  );

  it("is for the org's admins: a guest gets 403, another org's admin 404, no session 401", async () => {
    const { org, token } = await createTenant(app);
    await app.request('PUT', `/orgs/${org.slug}/email/integration`, { token, body: integration(newKey()) });
    const guest = await createUser(app, { role: 'Guest', org: org.slug });
    const outsider = await createTenant(app);
    const base = `/orgs/${org.slug}/email/integration`;
    expect((await app.request('GET', base, { token: await signIn(app, guest) })).status).toBe(403);
    for (const [method, body] of [['GET'], ['PUT', integration(newKey())], ['DELETE'], ['POST', undefined]] as const) {
      const url = method === 'POST' ? `${base}/test` : base;
      expect((await app.request(method, url, { token: outsider.token, body })).status).toBe(404);
    }
    expect((await app.request('GET', base)).status).toBe(401);
    expect((await (await app.request('GET', base, { token })).json()).configured).toBe(true);
  });
});
