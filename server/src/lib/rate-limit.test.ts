import { randomInt } from 'node:crypto';
import { redisAvailable, testRedisUrl } from '../../test/helpers/redis.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../test/helpers/webhooks.ts';

const redisUrl = testRedisUrl;
const available = await redisAvailable();

describe.runIf(available)('rate limits shared through Redis', () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    const env = { RATE_LIMIT_REDIS_URL: redisUrl, TRUST_PROXY: 'true' };
    first = await startTestApp(env);
    second = await startTestApp(env, { shareDatabaseWith: first });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('counts one client across two processes: the 11th login in a minute is refused by either', async () => {
    // A client address of its own, so parallel runs sharing this Redis do not meet.
    const ip = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
    const login = (app: TestApp) =>
      app.request('POST', '/auth/login/credentials', {
        body: { email: 'nobody@example.com', password: 'wrong password' },
        headers: { 'x-forwarded-for': ip },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await login(i % 2 === 0 ? first : second)).status);
    expect(statuses.every((status) => status === 401)).toBe(true);
    const refused = await login(first);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await login(second)).status).toBe(429);
  });

  it('counts one webhook across two processes: its per-minute limit holds for the pair', async () => {
    const setup = await setupWebhook(first, { rateLimitPerMinute: 4 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const ip = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;
      statuses.push(
        (await postEvent(i % 2 === 0 ? first : second, setup, { eventType: 'x' }, { headers: { 'x-forwarded-for': ip } })).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });
});
