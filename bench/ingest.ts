/**
 * Webhook ingest benchmark: signed `wh` posts at 50 connections, spread over 500 webhooks in 50 orgs
 * (per-webhook limits on: at most 1000/min each), unique externalIds and wh-ids. Printed beside a bare
 * Node HTTP POST server and pgbench's single-row insert rate, measured in the same run.
 *
 * The load comes from wrk (Debian package `wrk`): its C client leaves the two cores of a small
 * machine to the server and the database, as pgbench's client does. Every request is signed just
 * before its run (well within the 5-minute tolerance) and sent once.
 *
 * The baselines and the service are measured BENCH_ROUNDS (3) times, in turns; each round is printed,
 * then the median of the rounds' ratios (one run on a shared 2-core machine swings by a quarter).
 *
 *   npm run bench:ingest                     # PostgreSQL when reachable, and PGlite
 *   BENCH_DB=postgres npm run bench:ingest
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { signingHeaders } from '../server/src/features/ingest/verification.ts';
import { benchDatabase, fmt, median, percent, postgresReachable, startBareServer, startService, sentNow } from './lib/harness.ts';
import { metricSamples } from './lib/service-metrics.ts';
import { pgbenchInsertTps } from './lib/pgbench.ts';
import { seedWebhooks, type SeededWebhook } from './lib/seed.ts';
import { wrkLoad, type PreparedRequest } from './lib/wrk.ts';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ORGS = 50;
const WEBHOOKS_PER_ORG = 10;
const MASTER_KEY = 'bench-master-key-0123456789abcdef0123456789';
// More than any run here can send (a request sent twice would be a replay, and show as non-2xx).
const REQUESTS_PER_SECOND_PREPARED = 15_000;
if (DURATION > 120)
  throw new Error('BENCH_DURATION: at most 120 s, so that the last request is still within the signature tolerance');

/** Freshly signed events, round-robin over the webhooks. */
function signedRequests(webhooks: SeededWebhook[], count: number): PreparedRequest[] {
  return Array.from({ length: count }, (_, n) => {
    const webhook = webhooks[n % webhooks.length]!;
    const body = JSON.stringify({
      eventType: 'order.created',
      externalId: randomUUID(),
      data: { orderId: n, total: 42.5, items: [{ sku: 'A-1', qty: 2 }] },
    });
    return {
      method: 'POST',
      path: webhook.path,
      body,
      headers: { 'content-type': 'application/json', ...signingHeaders('wh', webhook.secret, body, sentNow()) },
    };
  });
}

/** Where the time goes: the writer's transactions, from the service's own metrics. */
async function batchSummary(url: string): Promise<string> {
  const samples = await metricSamples(url);
  const value = (name: string) => samples.get(name) ?? Number.NaN;
  const batches = value('webhook_ingest_batch_size_count');
  return `${fmt(batches)} transactions, ${(value('webhook_ingest_batch_size_sum') / batches).toFixed(1)} deliveries each, ${((value('webhook_ingest_batch_duration_seconds_sum') / batches) * 1000).toFixed(1)} ms each (mean, warm-up included)`;
}

/** One run of the service on a fresh database: its accepted requests per second. */
async function benchIngest(kind: 'postgres' | 'pglite', bareRps: number, pgbenchTps: number | undefined): Promise<number> {
  const database = await benchDatabase(kind);
  try {
    const env = { ...database.env, ENCRYPTION_MASTER_KEY: MASTER_KEY, NODE_ENV: 'development' };
    const webhooks = await seedWebhooks(env, { orgs: ORGS, webhooksPerOrg: WEBHOOKS_PER_ORG });
    const service = await startService({ ...env, WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '100000000', RUN_WORKERS: 'false' });
    try {
      await wrkLoad(service.url, signedRequests(webhooks, 2 * REQUESTS_PER_SECOND_PREPARED), {
        duration: 2,
        connections: CONNECTIONS,
      });
      const result = await wrkLoad(service.url, signedRequests(webhooks, DURATION * REQUESTS_PER_SECOND_PREPARED), {
        duration: DURATION,
        connections: CONNECTIONS,
        cpuOf: service.pid,
      });
      const accepted = result.requestsPerSecond;
      const parts = [
        `ingest (${kind.padEnd(8)}) : ${fmt(accepted).padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  non-2xx ${result.non2xx}  errors ${result.errors}`,
        `${percent(accepted / bareRps)} of bare`,
      ];
      if (pgbenchTps !== undefined)
        parts.push(`${percent(accepted / pgbenchTps)} of pgbench${kind === 'postgres' ? ' (target >= 35%)' : ''}`);
      parts.push(kind === 'postgres' ? 'targets: >= 5,000 req/s, p99 <= 50 ms' : 'target: >= 1,000 req/s');
      console.log(parts.join('  |  '));
      console.log(`  group commit: ${await batchSummary(service.url)}`);
      if (result.cpu) {
        const { serverUs, postgresUs, idlePercent } = result.cpu;
        // PGlite runs inside the server's process: its time is the server's.
        const database = kind === 'postgres' ? `, PostgreSQL ${postgresUs} µs (all its processes)` : '';
        console.log(
          `  CPU per request: server ${serverUs} µs${database}; machine idle ${idlePercent}% of ${availableParallelism()} cores (wrk runs on them too)`,
        );
      }
      return accepted;
    } finally {
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

const hasPostgres = await postgresReachable();
const kinds = process.env.BENCH_DB
  ? [process.env.BENCH_DB as 'postgres' | 'pglite']
  : hasPostgres
    ? (['postgres', 'pglite'] as const)
    : (['pglite'] as const);
console.log(
  `ingest benchmark: ${CONNECTIONS} connections (wrk), ${DURATION} s, ${ORGS * WEBHOOKS_PER_ORG} webhooks in ${ORGS} orgs, every request freshly signed (wh), node ${process.version}`,
);
/** The bare server's rate with the same client: the baseline. */
async function bareRate(): Promise<number> {
  const bare = await startBareServer();
  try {
    const body = JSON.stringify({ eventType: 'order.created', externalId: randomUUID(), data: { orderId: 1, total: 42.5 } });
    const baseline = await wrkLoad(
      bare.url,
      [{ method: 'POST', path: '/', body, headers: { 'content-type': 'application/json' } }],
      { duration: DURATION, connections: CONNECTIONS },
    );
    console.log(
      `bare node http POST    : ${fmt(baseline.requestsPerSecond).padStart(6)} req/s  p50 ${baseline.p50} ms  p99 ${baseline.p99} ms  (baseline)`,
    );
    return baseline.requestsPerSecond;
  } finally {
    await bare.stop();
  }
}

const ratios = new Map(kinds.map((kind) => [kind, { ofBare: [] as number[], ofPgbench: [] as number[] }]));
for (let round = 1; round <= ROUNDS; round++) {
  if (ROUNDS > 1) console.log(`round ${round}:`);
  const bareRps = await bareRate();
  let pgbenchTps: number | undefined;
  if (hasPostgres) {
    pgbenchTps = await pgbenchInsertTps(
      process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
      16,
      DURATION,
    );
    console.log(`pgbench 1-row insert   : ${fmt(pgbenchTps).padStart(6)} tps (16 clients, baseline)`);
  }
  for (const kind of kinds) {
    const accepted = await benchIngest(kind, bareRps, pgbenchTps);
    ratios.get(kind)!.ofBare.push(accepted / bareRps);
    if (pgbenchTps !== undefined) ratios.get(kind)!.ofPgbench.push(accepted / pgbenchTps);
  }
}
if (ROUNDS > 1) {
  console.log(`median of ${ROUNDS} rounds`);
  for (const [kind, { ofBare, ofPgbench }] of ratios) {
    const target = kind === 'postgres' ? 'target >= 35%' : 'target >= 30%';
    console.log(
      `ingest (${kind.padEnd(8)}) : ${percent(median(ofBare))} of bare (rounds: ${ofBare.map(percent).join(', ')})` +
        (ofPgbench.length > 0
          ? `; ${percent(median(ofPgbench))} of pgbench (rounds: ${ofPgbench.map(percent).join(', ')}; ${target})`
          : ''),
    );
  }
}
