import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

// Ingest posts are answered before Fastify routes them (ingest.fast-path.ts): these check what
// Fastify's hooks would otherwise have added, and that what the fast path declines still reaches
// Fastify's routes. The endpoint's own behaviour is tested in ingest.test.ts and routing.test.ts.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
};

/** One request over a raw socket: the request's head is sent, then `beforeRest` runs, then the rest. */
describe('ingest fast path', () => {
  it('answers both ingest paths with JSON, the security headers and no CORS headers, and counts them in the metrics', async () => {
    const setup = await setupWebhook(app);
    const [, , , slug, identifier] = setup.path.split('/');
    for (const path of [setup.path, `/webhooks/ingest/${slug}/${identifier}?source=crm`]) {
      const response = await postEvent(
        app,
        setup,
        { eventType: 'order.created', externalId: crypto.randomUUID() },
        { path, headers: { origin: 'http://app.test' } },
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(Object.fromEntries(Object.keys(SECURITY_HEADERS).map((name) => [name, response.headers.get(name)]))).toEqual(
        SECURITY_HEADERS,
      );
      expect([...response.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
      expect(await response.json()).toEqual({ success: true, actionId: expect.any(String) });
    }
    const unknown = await postEvent(app, setup, { eventType: 'x' }, { path: `/webhooks/actions/${slug}/no-such-webhook` });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-frame-options')).toBe('DENY');
    expect(await unknown.json()).toEqual({ error: 'No webhook at this URL', code: 'not_found' });

    const metrics = await (await app.request('GET', '/metrics')).text();
    const count = (route: string, status: number) =>
      Number(
        metrics.match(
          new RegExp(`^http_requests_total\\{method="POST",route="${route}",status="${status}"\\} (\\d+)$`, 'm'),
        )?.[1] ?? 0,
      );
    expect(count('/webhooks/actions/:org/:webhookIdentifier', 200)).toBeGreaterThanOrEqual(1);
    expect(count('/webhooks/ingest/:org/:identifier', 200)).toBeGreaterThanOrEqual(1);
    expect(count('/webhooks/actions/:org/:webhookIdentifier', 404)).toBeGreaterThanOrEqual(1);
  });

  it('decodes percent-encoded segments itself, and leaves other methods to Fastify, which answers them as before', async () => {
    const setup = await setupWebhook(app);
    const [, , , slug, identifier] = setup.path.split('/');
    const encodedSlug = [...slug!].map((char) => `%${char.charCodeAt(0).toString(16)}`).join('');
    expect(
      (await postEvent(app, setup, { eventType: 'x' }, { path: `/webhooks/actions/${encodedSlug}/${identifier}` })).status,
    ).toBe(200);

    const get = await app.request('GET', setup.path);
    expect(get.status).toBe(404);
    expect((await get.json()).code).toBe('not_found');
    const trailingSlash = await postEvent(app, setup, { eventType: 'x' }, { path: `${setup.path}/` });
    expect(trailingSlash.status).toBe(404);
    expect((await trailingSlash.json()).code).toBe('not_found');
  });

  it("answers 404 for an org or identifier longer than any there is, not Fastify's 414", async () => {
    const setup = await setupWebhook(app);
    const [, , , slug, identifier] = setup.path.split('/');
    for (const path of [
      `/webhooks/actions/${slug}/${'x'.repeat(101)}`,
      `/webhooks/ingest/${slug}/${'x'.repeat(5000)}`,
      `/webhooks/actions/${'o'.repeat(101)}/${identifier}`,
    ]) {
      const response = await postEvent(app, setup, { eventType: 'x' }, { path });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: 'No webhook at this URL', code: 'not_found' });
    }
  });

  it('ignores X-Forwarded-For for the sender address unless TRUST_PROXY says so', async () => {
    const setup = await setupWebhook(app, { blockedIps: ['10.66.0.0/16'] });
    expect((await postEvent(app, setup, { eventType: 'x' }, { headers: { 'x-forwarded-for': '10.66.4.2' } })).status).toBe(200);
    const loopback = await setupWebhook(app, { blockedIps: ['127.0.0.1', '::1'] });
    const blocked = await postEvent(app, loopback, { eventType: 'x' }, { headers: { 'x-forwarded-for': '192.0.2.8' } });
    expect(blocked.status).toBe(403);
    expect((await blocked.json()).code).toBe('ip_blocked');
  });
});
