import { describe, expect, it } from 'vitest';
import { runSoak } from '../../bench/lib/soak.ts';
import { redisAvailable, testRedisUrl } from './helpers/redis.ts';

const onPostgres = process.env.TEST_DB === 'postgres';
const redis = onPostgres && (await redisAvailable());

/**
 * The short soak (npm run soak is the long one): 2 serve + 2 worker processes on PostgreSQL, a
 * signed load with repeated external ids, approvals, a flaky callback receiver, and three or more
 * processes stopped and restarted (most by SIGKILL, some by SIGTERM).
 */
describe.runIf(onPostgres && redis)('a multi-process deployment whose processes are killed under load', () => {
  it('loses nothing, duplicates nothing, does no side effect twice, and leaves no lease', { timeout: 240_000 }, async () => {
    const report = await runSoak({
      durationSeconds: 20,
      rate: 8,
      killEverySeconds: 4,
      minStops: 3,
      serves: 2,
      workers: 2,
      settleSeconds: 90,
      redisUrl: testRedisUrl,
      postgresUrl: process.env.TEST_DATABASE_URL,
      print: () => {},
    });
    const failed = report.figures.filter((figure) => !figure.ok);
    expect(failed, `failed checks (the processes' log: ${report.logFile})`).toEqual([]);
    expect(report.kills.length + report.terms.length).toBeGreaterThanOrEqual(3);
    const figure = (name: string) => report.figures.find((f) => f.name === name)?.value;
    expect(figure('events acknowledged 200/202')).toBeGreaterThan(100);
    expect(figure('actions completed')).toBeGreaterThan(50);
  });
});
