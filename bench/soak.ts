/**
 * The soak: 2 `serve` + 2 `worker` processes on PostgreSQL with Redis limits, a steady signed load
 * (external ids sent twice, some at once; `ask` tool calls approved by the script; a callback
 * receiver answering 500 to 10%), and a random process stopped and restarted every few seconds: by
 * SIGKILL, or one time in three by SIGTERM (which must drain and exit 0).
 * At the end: 0 lost, 0 duplicates, 0 side effects done twice, every action final, callbacks in
 * order, no lease left. Exits 1 when a check fails.
 *
 *   npm run soak                        # SOAK_SECONDS=120, SOAK_RATE=20 external ids/s, SOAK_KILL_EVERY=5 s
 */
import { postgresReachable } from './lib/harness.ts';
import { runSoak } from './lib/soak.ts';

if (!(await postgresReachable())) {
  console.log('soak: PostgreSQL is not reachable (BENCH_DATABASE_URL); the soak runs on PostgreSQL only');
  process.exit(1);
}
const report = await runSoak({
  durationSeconds: Number(process.env.SOAK_SECONDS ?? 120),
  rate: Number(process.env.SOAK_RATE ?? 20),
  killEverySeconds: Number(process.env.SOAK_KILL_EVERY ?? 5),
  serves: Number(process.env.SOAK_SERVES ?? 2),
  workers: Number(process.env.SOAK_WORKERS ?? 2),
  settleSeconds: Number(process.env.SOAK_SETTLE_SECONDS ?? 120),
  redisUrl: process.env.SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379',
  postgresUrl: process.env.BENCH_DATABASE_URL,
  print: (line) => console.log(line),
});
console.log(report.ok ? 'soak: every check holds' : `soak: FAILED (the processes' log: ${report.logFile})`);
process.exit(report.ok ? 0 : 1);
