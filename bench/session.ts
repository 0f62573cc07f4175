/**
 * Session check benchmark: authenticated GET /auth/me per second against a bare Node HTTP server
 * measured in the same run, on the same machine; then /healthz latency while 20 logins (bcrypt,
 * cost 12) run at once, to show hashing never blocks the event loop.
 *
 *   npm run bench:session                     # PostgreSQL when reachable, and PGlite
 *   BENCH_DB=pglite npm run bench:session     # one database only
 */
import { benchDatabase, fmt, load, postgresReachable, runCli, startBareServer, startService } from './lib/harness.ts';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const PASSWORD = 'benchmark password';

async function benchDatabaseKind(kind: 'postgres' | 'pglite', bareRps: number) {
  const database = await benchDatabase(kind);
  try {
    await runCli(database.env, 'users', 'create', '--email', 'bench@example.com', '--password', PASSWORD, '--role', 'Admin');
    const service = await startService({ ...database.env, AUTH_RATE_LIMIT_PER_MINUTE: '1000000' });
    try {
      const login = await fetch(`${service.url}/auth/login/credentials`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'bench@example.com', password: PASSWORD }),
      });
      const token = /session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1];
      if (!token) throw new Error(`login failed: ${login.status}`);

      await load({
        url: `${service.url}/auth/me`,
        headers: { authorization: `Bearer ${token}` },
        duration: 2,
        connections: CONNECTIONS,
      });
      const me = await load({
        url: `${service.url}/auth/me`,
        headers: { authorization: `Bearer ${token}` },
        duration: DURATION,
        connections: CONNECTIONS,
      });
      const ratio = me.requestsPerSecond / bareRps;
      console.log(
        `GET /auth/me (${kind.padEnd(8)}) : ${fmt(me.requestsPerSecond).padStart(7)} req/s  p50 ${me.p50} ms  p99 ${me.p99} ms  ` +
          `non-2xx ${me.non2xx}  => ${(ratio * 100).toFixed(0)}% of bare (target >= 40%)`,
      );

      const loginBody = JSON.stringify({ email: 'bench@example.com', password: PASSWORD });
      const [logins, health] = await Promise.all([
        load({
          url: `${service.url}/auth/login/credentials`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: loginBody,
          connections: 20,
          duration: DURATION,
        }),
        load({ url: `${service.url}/healthz`, connections: 1, duration: DURATION }),
      ]);
      console.log(
        `  /healthz while 20 logins run at once (${kind}): p50 ${health.p50} ms  p99 ${health.p99} ms (target < 20 ms); ` +
          `logins ${logins.requestsPerSecond.toFixed(1)}/s, non-2xx ${logins.non2xx}`,
      );
    } finally {
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

const kinds = process.env.BENCH_DB
  ? [process.env.BENCH_DB as 'postgres' | 'pglite']
  : (await postgresReachable())
    ? (['postgres', 'pglite'] as const)
    : (['pglite'] as const);
console.log(`session benchmark: ${CONNECTIONS} connections, ${DURATION} s per measurement, node ${process.version}`);
const bare = await startBareServer();
try {
  await load({ url: bare.url, duration: 2, connections: CONNECTIONS });
  const baseline = await load({ url: bare.url, duration: DURATION, connections: CONNECTIONS });
  console.log(
    `bare node http        : ${fmt(baseline.requestsPerSecond).padStart(7)} req/s  p50 ${baseline.p50} ms  p99 ${baseline.p99} ms  (baseline)`,
  );
  await bare.stop();
  for (const kind of kinds) await benchDatabaseKind(kind, baseline.requestsPerSecond);
} finally {
  await bare.stop();
}
