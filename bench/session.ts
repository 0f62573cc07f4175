/**
 * Session check benchmark: authenticated GET /auth/me per second against a bare Node HTTP server
 * measured in the same round, on the same machine; then /healthz latency while 20 logins (bcrypt,
 * cost 12) run at once, to show hashing never blocks the event loop.
 *
 * The baseline and the service are measured BENCH_ROUNDS (3) times, in turns, each on a fresh
 * database; each round is printed with where the CPU went, then the medians of the rounds' figures.
 * The client (autocannon) runs in this process. The bare server answers faster than that client
 * reads, so the client seldom sleeps; the service answers slower, so every answer wakes the client,
 * and on a VM that wake-up is a large part of the server's CPU per request (docs/benchmarks.md).
 *
 *   npm run bench:session                     # PostgreSQL when reachable, and PGlite
 *   BENCH_DB=pglite npm run bench:session     # one database only
 */
import { availableParallelism } from 'node:os';
import {
  benchDatabase,
  fmt,
  load,
  median,
  percent,
  postgresReachable,
  runCli,
  startBareServer,
  startService,
} from './lib/harness.ts';
import { cpuPerRequest, cpuSnapshot } from './lib/cpu-usage.ts';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PASSWORD = 'benchmark password';

type Kind = 'postgres' | 'pglite';

/** `load` with the CPU it took: the server's and PostgreSQL's per request, this process's (the client), the machine's idle share. */
async function measuredLoad(serverPid: number, options: Parameters<typeof load>[0] & { duration: number }) {
  const before = cpuSnapshot(serverPid);
  const clientBefore = process.cpuUsage();
  const result = await load(options);
  const after = cpuSnapshot(serverPid);
  const client = process.cpuUsage(clientBefore);
  const requests = result.requestsPerSecond * options.duration;
  const cpu = before && after ? cpuPerRequest(before, after, requests) : undefined;
  return { ...result, cpu, clientUs: Math.round((client.user + client.system) / requests) };
}

/** Where a measured load's CPU went, as printed under it; nothing where /proc is missing. */
function printCpu({ cpu, clientUs }: Awaited<ReturnType<typeof measuredLoad>>, server: string, withPostgres = false): void {
  if (!cpu) return;
  // GET /auth/me is served from the session cache: PostgreSQL's share is what else the machine's database did.
  const postgres = withPostgres ? `; PostgreSQL ${cpu.postgresUs} µs` : '';
  console.log(
    `  CPU per request: ${server} ${cpu.serverUs} µs, the client ${clientUs} µs; ` +
      `machine idle ${cpu.idlePercent}% of ${availableParallelism()} cores${postgres}`,
  );
}

async function benchDatabaseKind(kind: Kind, bareRps: number): Promise<{ ofBare: number; healthP99: number }> {
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

      const me = { url: `${service.url}/auth/me`, headers: { authorization: `Bearer ${token}` }, connections: CONNECTIONS };
      await load({ ...me, duration: 2 });
      const answered = await measuredLoad(service.pid, { ...me, duration: DURATION });
      const ofBare = answered.requestsPerSecond / bareRps;
      console.log(
        `GET /auth/me (${kind.padEnd(8)}) : ${fmt(answered.requestsPerSecond).padStart(7)} req/s  p50 ${answered.p50} ms  p99 ${answered.p99} ms  ` +
          `non-2xx ${answered.non2xx}  => ${percent(ofBare)} of bare (target >= 40%)`,
      );
      printCpu(answered, 'server', kind === 'postgres');

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
      return { ofBare, healthP99: health.p99 };
    } finally {
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

/** The bare server's rate with the same client: the round's baseline. */
async function bareRate(): Promise<number> {
  const bare = await startBareServer();
  try {
    await load({ url: bare.url, duration: 2, connections: CONNECTIONS });
    const baseline = await measuredLoad(bare.pid, { url: bare.url, duration: DURATION, connections: CONNECTIONS });
    console.log(
      `bare node http        : ${fmt(baseline.requestsPerSecond).padStart(7)} req/s  p50 ${baseline.p50} ms  p99 ${baseline.p99} ms  (baseline)`,
    );
    printCpu(baseline, 'bare server');
    return baseline.requestsPerSecond;
  } finally {
    await bare.stop();
  }
}

const kinds: readonly Kind[] = process.env.BENCH_DB
  ? [process.env.BENCH_DB as Kind]
  : (await postgresReachable())
    ? ['postgres', 'pglite']
    : ['pglite'];
console.log(
  `session benchmark: ${CONNECTIONS} connections, ${DURATION} s per measurement, ${ROUNDS} round(s), node ${process.version}`,
);
const rounds = new Map(kinds.map((kind) => [kind, { ofBare: [] as number[], healthP99: [] as number[] }]));
for (let round = 1; round <= ROUNDS; round++) {
  if (ROUNDS > 1) console.log(`round ${round}:`);
  const bareRps = await bareRate();
  for (const kind of kinds) {
    const { ofBare, healthP99 } = await benchDatabaseKind(kind, bareRps);
    rounds.get(kind)!.ofBare.push(ofBare);
    rounds.get(kind)!.healthP99.push(healthP99);
  }
}
if (ROUNDS > 1) {
  console.log(`median of ${ROUNDS} rounds`);
  for (const [kind, { ofBare, healthP99 }] of rounds)
    console.log(
      `GET /auth/me (${kind.padEnd(8)}) : ${percent(median(ofBare))} of bare (rounds: ${ofBare.map(percent).join(', ')}; target >= 40%); ` +
        `/healthz p99 during logins ${median(healthP99)} ms (rounds: ${healthP99.join(', ')}; target < 20 ms)`,
    );
}
