import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { threadsRepo } from './threads.repo.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

describe('GET /api/threads', () => {
  it('is empty for a new user and needs a session', async () => {
    const token = await signIn(app, await createUser(app));
    const response = await app.request('GET', '/api/threads', { token });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ threads: [], nextCursor: null });
    expect((await app.request('GET', '/api/threads')).status).toBe(401);
  });

  it("pages through the caller's threads newest first, and never shows another user's", async () => {
    const { org, admin, token } = await createTenant(app);
    const other = await createUser(app, { org: org.slug });
    const base = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const thread = await threadsRepo.insert(app.container.db, {
        id: randomUUID(),
        orgId: org.id,
        userId: admin.id,
        channel: 'webhook',
        title: `t${i}`,
        createdAt: new Date(base + i * 1000),
      });
      ids.unshift(thread.id);
    }
    await threadsRepo.insert(app.container.db, {
      id: randomUUID(),
      orgId: org.id,
      userId: other.id,
      channel: 'webhook',
      title: 'theirs',
    });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2';
      const page = await (await app.request('GET', `/api/threads${query}`, { token })).json();
      seen.push(...page.threads.map((t: { id: string }) => t.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);
  });

  it('answers 400 for a bad cursor or limit', async () => {
    const token = await signIn(app, await createUser(app));
    for (const query of ['?cursor=garbage', '?limit=0', '?limit=1000', '?limit=abc']) {
      const response = await app.request('GET', `/api/threads${query}`, { token });
      expect(response.status).toBe(400);
      expect((await response.json()).code).toBe('validation_failed');
    }
    const notANumber = await (await app.request('GET', '/api/threads?limit=abc', { token })).json();
    expect(notANumber.error).toBe('querystring/limit: expected a whole number');
  });
});
