/**
 * Callback benchmark: lifecycle transitions (running -> completed) committed at a fixed rate over 100
 * webhooks in 20 orgs, with one, then two callback endpoints per webhook on a local receiver (its own
 * process). The server's dispatcher (its own process, like production) signs and POSTs each callback.
 * Beside the baseline (a bare Node HTTP client POSTing to the same receiver), each endpoint count is
 * measured twice: the latency from the transition's commit to the receiver's receipt at BENCH_RATE,
 * under capacity; and deliveries per second at BENCH_CAPACITY_RATE, above it, so that the service
 * and not the offered load is the limit (at BENCH_RATE every offered delivery arrives).
 *
 * The baseline and the phases run BENCH_ROUNDS (3) times, in turns; each round is printed, then the
 * medians of the rounds (one run on a shared 2-core machine swings by a quarter).
 *
 *   npm run bench:callbacks    # BENCH_ENDPOINTS=1,2, BENCH_RATE=1200 and BENCH_CAPACITY_RATE=4000 transitions/s for BENCH_DURATION=10 s
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../server/src/config.ts';
import { createContainer } from '../server/src/container.ts';
import { openDatabase } from '../server/src/db/database.ts';
import { webhookInput } from '../server/src/features/webhooks/webhooks.schemas.ts';
import { writeActions } from '../server/src/features/actions/action-writes.ts';
import { callbackEndpointInput } from '../server/src/features/callbacks/callbacks.schemas.ts';
import { BUS_TOPICS, createProcessBus } from '../server/src/lib/process-bus.ts';
import { pino } from 'pino';
import { cpuPerRequest, cpuSnapshot, processesCpuSeconds, type CpuPerRequest } from './lib/cpu-usage.ts';
import { benchDatabase, fmt, median, freePort, percent, ownChild, postgresReachable, startService } from './lib/harness.ts';

const RATE = Number(process.env.BENCH_RATE ?? 1200);
const CAPACITY_RATE = Number(process.env.BENCH_CAPACITY_RATE ?? 4000);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const PRODUCER_IN_FLIGHT = Number(process.env.BENCH_PRODUCER_IN_FLIGHT ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Endpoints per webhook, one measured pair of phases each (`BENCH_ENDPOINTS=2` for the two-endpoint phases alone). */
const ENDPOINT_COUNTS = (process.env.BENCH_ENDPOINTS ?? '1,2').split(',').map(Number);
const ORGS = 20;
const WEBHOOKS_PER_ORG = 5;
const MASTER_KEY = 'bench-master-key-0123456789abcdef0123456789';
const now = () => performance.timeOrigin + performance.now();
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

if (!(await postgresReachable())) {
  console.log('callbacks benchmark: PostgreSQL is not reachable; it runs on PostgreSQL only');
  process.exit(0);
}

const receiverPort = await freePort();
const receiverUrl = `http://127.0.0.1:${receiverPort}/callbacks`;
const receiver = ownChild(
  fork(join(import.meta.dirname, 'lib', 'callback-receiver.ts'), { env: { ...process.env, PORT: String(receiverPort) } }),
);
await new Promise((resolve) => receiver.once('message', resolve));
/** What the receiver has seen (and, with `reset`, forget it). */
const receiverReport = (reset = false) =>
  new Promise<Map<string, number>>((resolve) => {
    receiver.once('message', (message: { arrivals: Array<[string, number]> }) => resolve(new Map(message.arrivals)));
    receiver.send({ report: true, reset });
  });

/** The baseline: the same number of POSTs a bare keep-alive Node client gets through, 100 in flight, for 5 s. */
async function bareClientBaseline(): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 100 });
  const body = JSON.stringify({
    type: 'action.completed',
    timestamp: new Date().toISOString(),
    data: { actionId: randomUUID(), status: 'completed', result: { ok: true } },
  });
  let done = 0;
  const until = Date.now() + 5000;
  const worker = async () => {
    while (Date.now() < until) {
      await new Promise<void>((resolve, reject) => {
        const req = request(
          receiverUrl,
          {
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              'webhook-id': randomUUID(),
            },
          },
          (res) => {
            res.resume();
            res.on('end', resolve);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      done++;
    }
  };
  await Promise.all(Array.from({ length: 100 }, worker));
  agent.destroy();
  return done / 5;
}

interface PhaseResult {
  committedPerSecond: number;
  deliveriesPerSecond: number;
  delivered: number;
  expected: number;
  /** Transitions the producer had not committed when the time was up (it fell behind PostgreSQL). */
  notOffered: number;
  /** The most transitions that were due and not yet sent at one moment. */
  maxBehind: number;
  p50: number;
  p99: number;
  /** The p50 of the two parts of the latency: commit -> the first attempt's start (the signal, the claim), and that start -> receipt. */
  p50ToAttempt: number;
  p50AttemptToReceipt: number;
  /** Per delivery, from the first commit to the last receipt: the server (its dispatcher), PostgreSQL, and the machine left idle. */
  cpu: CpuPerRequest | undefined;
  /** Per delivery, the CPU of this process (the producer) and the receiver, which share the machine with the service. */
  loadUs: number;
}

/** One measured run on a fresh database and server: transitions at `rate`, `endpoints` endpoints per webhook. */
async function phase(endpoints: number, rate: number): Promise<PhaseResult> {
  const database = await benchDatabase('postgres');
  try {
    const env: Record<string, string> = {
      ...database.env,
      ENCRYPTION_MASTER_KEY: MASTER_KEY,
      NODE_ENV: 'development',
      CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'warn',
    };
    // Seed through the services: orgs, webhooks and their endpoints; then the running actions to
    // complete (leased to this benchmark, so that the server's runner does not resume them).
    const container = await createContainer(loadConfig(env));
    try {
      await container.database.migrate();
      const { orgs, webhooks, callbacks } = container.services;
      for (let o = 0; o < ORGS; o++) {
        const org = await orgs.create(`bench-${o}`, `Bench ${o}`);
        for (let w = 0; w < WEBHOOKS_PER_ORG; w++) {
          const { webhook } = await webhooks.create(org, webhookInput.parse({ name: `hook ${w}` }));
          for (let e = 0; e < endpoints; e++)
            await callbacks.create(
              org.id,
              webhook.id,
              callbackEndpointInput.parse({ url: `${receiverUrl}/${e}`, events: ['action.completed', 'action.failed'] }),
            );
        }
      }
      await sql`
        insert into actions (id, org_id, webhook_id, delivery_id, status, event_type, external_id, lease_expires_at)
        select gen_random_uuid(), w.org_id, w.id, gen_random_uuid(), 'running', 'order.created', 'bench-' || n, now() + interval '1 hour'
        from generate_series(1, ${rate * DURATION}::int) as n
        join (select id, org_id, row_number() over (order by id) - 1 as i from webhooks) w on w.i = n % ${ORGS * WEBHOOKS_PER_ORG}`.execute(
        container.db,
      );
    } finally {
      await container.close();
    }

    const service = await startService({ ...env });
    // The transitions come from this process, as from another worker's runs: the transitions due at
    // a moment are committed together in one statement (writeActions, as the runners' group commit
    // does), at most PRODUCER_IN_FLIGHT statements at a time, each followed by the signal a worker
    // sends after a transition. Transitions due while those are in flight wait for the next
    // statement, so the producer falls behind the offered rate only when PostgreSQL does.
    const producer = await openDatabase({ url: env.DATABASE_URL, poolSize: PRODUCER_IN_FLIGHT });
    const bus = createProcessBus({ postgresUrl: env.DATABASE_URL, logger: pino({ level: 'warn' }) });
    try {
      const actionIds = (await producer.db.selectFrom('actions').select('id').execute()).map((row) => row.id);
      await receiverReport(true);
      const committedAt = new Map<string, number>();
      let next = 0;
      let inFlight = 0;
      let maxBehind = 0;
      const commit = async (ids: string[]) => {
        inFlight++;
        try {
          const written = await writeActions(
            producer.db,
            ids.map((actionId) => ({
              actionId,
              transition: {
                actionId,
                from: 'running' as const,
                to: 'completed' as const,
                cause: 'bench',
                changes: { result: '{"ok":true}', leaseExpiresAt: null },
              },
            })),
          );
          const at = now();
          written.forEach((write, i) => {
            if (!write.moved) throw new Error(`action ${ids[i]} was not running`);
            committedAt.set(ids[i]!, at);
          });
          bus.signal(BUS_TOPICS.callbacks);
        } finally {
          inFlight--;
        }
      };
      const loadPids = [process.pid, receiver.pid!];
      const cpuBefore = cpuSnapshot(service.pid);
      const loadBefore = processesCpuSeconds(loadPids);
      const begin = now();
      const pending: Array<Promise<void>> = [];
      while (now() - begin < DURATION * 1000) {
        const due = Math.min(actionIds.length, Math.floor(((now() - begin) / 1000) * rate));
        maxBehind = Math.max(maxBehind, due - next);
        if (next < due && inFlight < PRODUCER_IN_FLIGHT) {
          pending.push(commit(actionIds.slice(next, due)));
          next = due;
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await Promise.all(pending);
      const expected = committedAt.size * endpoints;

      let arrivals = await receiverReport();
      const deadline = Date.now() + 60_000;
      while (arrivals.size < expected && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        arrivals = await receiverReport();
      }
      const cpuAfter = cpuSnapshot(service.pid);
      const loadAfter = processesCpuSeconds(loadPids);
      const deliveries = await producer.db
        .selectFrom('callbackDeliveries')
        .select(['id', 'actionId', 'status', 'attemptCount', 'lastError'])
        .execute();
      const states = new Map<string, number>();
      for (const delivery of deliveries) {
        const key = `${delivery.status}${delivery.attemptCount > 1 ? ` after ${delivery.attemptCount} attempts` : ''}${delivery.lastError ? ` (${delivery.lastError})` : ''}`;
        states.set(key, (states.get(key) ?? 0) + 1);
      }
      console.log(`  deliveries by state         : ${[...states].map(([key, count]) => `${count} ${key}`).join(', ')}`);
      // Where the latency goes: the first attempt's start is stamped by the server's clock, to the millisecond.
      const firstAttempts = await producer.db
        .selectFrom('callbackAttempts')
        .select(['deliveryId', (eb) => eb.fn.min('attemptedAt').as('attemptedAt')])
        .groupBy('deliveryId')
        .execute();
      const attemptedAt = new Map(firstAttempts.map((row) => [row.deliveryId, new Date(row.attemptedAt).getTime()]));
      const latencies: number[] = [];
      const toAttempt: number[] = [];
      const attemptToReceipt: number[] = [];
      let last = 0;
      for (const delivery of deliveries) {
        const received = arrivals.get(delivery.id);
        const at = committedAt.get(delivery.actionId);
        if (received === undefined || at === undefined) continue;
        latencies.push(received - at);
        last = Math.max(last, received);
        const started = attemptedAt.get(delivery.id);
        if (started === undefined) continue;
        toAttempt.push(started - at);
        attemptToReceipt.push(received - started);
      }
      for (const values of [latencies, toAttempt, attemptToReceipt]) values.sort((a, b) => a - b);
      return {
        committedPerSecond: committedAt.size / DURATION,
        deliveriesPerSecond: latencies.length / ((last - begin) / 1000),
        delivered: latencies.length,
        expected,
        notOffered: actionIds.length - next,
        maxBehind,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        p50ToAttempt: percentile(toAttempt, 50),
        p50AttemptToReceipt: percentile(attemptToReceipt, 50),
        cpu: cpuBefore && cpuAfter ? cpuPerRequest(cpuBefore, cpuAfter, latencies.length) : undefined,
        loadUs: Math.round(((loadAfter - loadBefore) * 1e6) / latencies.length),
      };
    } finally {
      await bus.close();
      await producer.close();
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

const printPhase = (title: string, result: PhaseResult, baseline: number) => {
  console.log(title);
  console.log(
    `  transitions committed       : ${fmt(result.committedPerSecond).padStart(6)} /s (${result.notOffered} not offered; at most ${result.maxBehind} waited for a statement, ${PRODUCER_IN_FLIGHT} in flight)`,
  );
  console.log(
    `  callbacks delivered         : ${fmt(result.deliveriesPerSecond).padStart(6)} deliveries/s (${result.delivered} of ${result.expected}) = ${percent(result.deliveriesPerSecond / baseline)} of the bare client`,
  );
  console.log(
    `  commit -> receipt           : p50 ${result.p50.toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms ` +
      `(p50 commit -> attempt ${result.p50ToAttempt.toFixed(1)} ms, attempt -> receipt ${result.p50AttemptToReceipt.toFixed(1)} ms)`,
  );
  if (result.cpu)
    console.log(
      `  CPU per delivery            : server ${result.cpu.serverUs} us, PostgreSQL ${result.cpu.postgresUs} us (with the transition's commit), producer and receiver ${result.loadUs} us; machine ${result.cpu.idlePercent}% idle`,
    );
};

try {
  console.log(
    `callbacks benchmark: ${RATE} transitions/s offered for latency, ${CAPACITY_RATE}/s for capacity, ${DURATION} s each, over ${ORGS * WEBHOOKS_PER_ORG} webhooks in ${ORGS} orgs, on PostgreSQL, node ${process.version}`,
  );
  const rounds = new Map(ENDPOINT_COUNTS.map((endpoints) => [endpoints, { ofBare: [] as number[], p50: [] as number[] }]));
  for (let round = 1; round <= ROUNDS; round++) {
    if (ROUNDS > 1) console.log(`round ${round}:`);
    const baseline = await bareClientBaseline();
    console.log(`baseline: bare client          : ${fmt(baseline).padStart(6)} POSTs/s to the same receiver (100 in flight)`);
    for (const endpoints of ENDPOINT_COUNTS) {
      const perWebhook = `${endpoints} endpoint${endpoints > 1 ? 's' : ''} per webhook`;
      const latency = await phase(endpoints, RATE);
      printPhase(`${perWebhook}, ${RATE} transitions/s (latency, under capacity):`, latency, baseline);
      const capacity = await phase(endpoints, CAPACITY_RATE);
      printPhase(`${perWebhook}, ${CAPACITY_RATE} transitions/s (capacity, above it):`, capacity, baseline);
      rounds.get(endpoints)!.ofBare.push(capacity.deliveriesPerSecond / baseline);
      rounds.get(endpoints)!.p50.push(latency.p50);
    }
  }
  console.log(
    ROUNDS > 1
      ? `median of ${ROUNDS} rounds (targets: >= 10% of the bare client, p50 <= 10 ms)`
      : 'targets: >= 10% of the bare client, p50 <= 10 ms',
  );
  for (const [endpoints, { ofBare, p50 }] of rounds) {
    console.log(
      `  ${endpoints} endpoint${endpoints > 1 ? 's' : ' '}: capacity ${percent(median(ofBare))} of the bare client (rounds: ${ofBare.map(percent).join(', ')}); ` +
        `p50 at ${RATE}/s ${median(p50).toFixed(1)} ms (rounds: ${p50.map((value) => value.toFixed(1)).join(', ')})`,
    );
  }
} finally {
  receiver.kill('SIGTERM');
}
