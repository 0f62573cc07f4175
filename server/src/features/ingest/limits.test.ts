import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

describe('rate limits (per sender IP and per webhook)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '120', TRUST_PROXY: 'true' }, { workers: false });
  });
  afterAll(async () => app?.close());

  it('allows 100 requests a minute per webhook by default; the 101st is 429', async () => {
    const setup = await setupWebhook(app);
    const statuses = await Promise.all(
      Array.from({ length: 101 }, (_, i) =>
        postEvent(
          app,
          setup,
          { eventType: 'x', externalId: `e-${i}` },
          { headers: { 'x-forwarded-for': `10.7.${Math.floor(i / 50)}.${i % 50}` } },
        ).then((r) => r.status),
      ),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    expect(statuses.filter((status) => status === 429)).toHaveLength(1);
  });

  it("counts only verified requests against the webhook's own limit: 150 unsigned posts do not lock its sender out", async () => {
    const setup = await setupWebhook(app);
    const unsigned = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        app
          .request('POST', setup.path, {
            body: { eventType: 'x' },
            headers: { 'x-forwarded-for': `10.9.${Math.floor(i / 50)}.${i % 50}` },
          })
          .then((response) => response.status),
      ),
    );
    expect(new Set(unsigned)).toEqual(new Set([401]));
    expect((await postEvent(app, setup, { eventType: 'x' }, { headers: { 'x-forwarded-for': '10.9.9.9' } })).status).toBe(200);
  });

  it('limits one client address across webhooks (WEBHOOK_IP_RATE_LIMIT_PER_MINUTE)', async () => {
    const a = await setupWebhook(app, { rateLimitPerMinute: 1000 });
    const b = await setupWebhook(app, { rateLimitPerMinute: 1000 });
    const headers = { 'x-forwarded-for': '10.8.0.1' };
    const statuses: number[] = [];
    for (let i = 0; i < 121; i++) statuses.push((await postEvent(app, i % 2 ? a : b, { eventType: 'x' }, { headers })).status);
    expect(statuses.slice(0, 120).every((status) => status === 200)).toBe(true);
    expect(statuses[120]).toBe(429);
    expect((await postEvent(app, a, { eventType: 'x' }, { headers: { 'x-forwarded-for': '10.8.0.2' } })).status).toBe(200);
  });
});

describe('a persistence failure', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({}, { workers: false });
  });
  afterAll(async () => app?.close());

  it('answers 500 with the error shape and no internals, and acknowledges nothing', async () => {
    const setup = await setupWebhook(app);
    await sql`alter table webhook_deliveries rename to webhook_deliveries_gone`.execute(app.container.db);
    try {
      const response = await postEvent(app, setup, { eventType: 'order.created', externalId: 'lost-1' });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: 'Internal server error', code: 'internal_error' });
    } finally {
      await sql`alter table webhook_deliveries_gone rename to webhook_deliveries`.execute(app.container.db);
    }
    const actions = await app.container.db.selectFrom('actions').select('id').where('orgId', '=', setup.tenant.org.id).execute();
    expect(actions).toHaveLength(0);
    expect((await postEvent(app, setup, { eventType: 'order.created', externalId: 'lost-1' })).status).toBe(200);
  });
});
