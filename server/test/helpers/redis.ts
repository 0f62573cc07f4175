import { Redis } from 'ioredis';

/** Redis is one of the machine's services, like PostgreSQL; REQUIRE_REDIS=1 (CI) makes its absence a failure. */
export const testRedisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether the machine's Redis answers; throws when it does not and REQUIRE_REDIS=1. */
export async function redisAvailable(): Promise<boolean> {
  const client = new Redis(testRedisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  client.on('error', () => {});
  let reachable = false;
  try {
    await client.connect();
    reachable = (await client.ping()) === 'PONG';
  } catch {
    reachable = false;
  } finally {
    client.disconnect();
  }
  if (!reachable && process.env.REQUIRE_REDIS === '1')
    throw new Error(`REQUIRE_REDIS=1 but Redis at ${testRedisUrl} is not reachable`);
  return reachable;
}
