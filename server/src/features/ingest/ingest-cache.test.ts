import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';
import { createIngestCache } from './ingest-cache.ts';
import { ingestRepo } from './ingest.repo.ts';

const TTL_MS = 500;

describe('ingest cache', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({}, { workers: false });
  });
  afterAll(async () => app?.close());
  afterEach(() => vi.restoreAllMocks());

  const newCache = () => createIngestCache({ ...app.container, ttlMs: TTL_MS });
  const identifierOf = (path: string) => path.split('/').pop()!;
  // Changed behind the cache's back: no invalidation reaches it, only its lifetime.
  const setLimit = (id: string, rateLimitPerMinute: number) =>
    app.container.db.updateTable('webhooks').set({ rateLimitPerMinute }).where('id', '=', id).execute();

  it('answers an expired entry once more while one reload runs, then the reloaded one; past twice its lifetime, it waits for the load', async () => {
    const setup = await setupWebhook(app);
    const identifier = identifierOf(setup.path);
    const cache = newCache();
    expect((await cache.webhook(identifier))?.row.rateLimitPerMinute).toBe(100);

    await setLimit(setup.webhook.id, 7);
    expect((await cache.webhook(identifier))?.row.rateLimitPerMinute).toBe(100);
    app.clock.advance(TTL_MS + 100);
    expect((await cache.webhook(identifier))?.row.rateLimitPerMinute).toBe(100);
    await eventually(
      'the reloaded entry',
      async () => ((await cache.webhook(identifier))?.row.rateLimitPerMinute === 7 ? true : undefined),
      5_000,
    );

    await setLimit(setup.webhook.id, 8);
    app.clock.advance(2 * TTL_MS + 100);
    expect((await cache.webhook(identifier))?.row.rateLimitPerMinute).toBe(8);
  });

  it('loads a key once for concurrent requests', async () => {
    const setup = await setupWebhook(app);
    const identifier = identifierOf(setup.path);
    const cache = newCache();
    const lookups = vi.spyOn(ingestRepo, 'findWebhook');
    const found = await Promise.all(Array.from({ length: 20 }, () => cache.webhook(identifier)));
    expect(lookups).toHaveBeenCalledTimes(1);
    expect(new Set(found).size).toBe(1);
    expect(found[0]?.row.id).toBe(setup.webhook.id);
  });

  it('a rule id that another org sends does not hide the rule from its own org', async () => {
    const owner = await setupWebhook(app);
    const other = await setupWebhook(app);
    const probe = await postEvent(app, other, { eventType: 'x', actionRuleId: owner.ruleId });
    expect(probe.status).toBe(202);
    expect(await probe.json()).toMatchObject({ buffered: true, reason: 'action_rule_not_found' });
    const own = await postEvent(app, owner, { eventType: 'x' });
    expect(own.status).toBe(200);
    expect(await own.json()).toMatchObject({ success: true, actionId: expect.any(String) });
  });
});
