/**
 * Scale benchmark: the load of bench/actions (signed events over 500 webhooks, a model answering at
 * once, one `allow` tool call per action) at the same offered rate, on PostgreSQL with Redis limits,
 * twice: on one process (`serve` with its workers), and on 2 `serve` (RUN_WORKERS=false) + 2 `worker`
 * processes, the client spreading its posts over the serves in turn (a round-robin balancer). For each:
 * ingest -> running and ingest -> completed p50/p99, the share of actions slower than 1 s (a wake-up
 * lost to a 2 s poll would show there), actions completed per second, and the database's work and CPU
 * per action. Both are measured BENCH_ROUNDS times, in turns; the ratio printed last is the median
 * of the rounds'. Target: the multi-process p50 ingest -> completed within 1.2x of the single process (issue 39; 1.5x before).
 *
 *   npm run bench:scale                 # BENCH_RATE=100 events/s, BENCH_DURATION=10 s after BENCH_WARMUP=5 s, BENCH_ROUNDS=3
 *   BENCH_SERVES=1 BENCH_WORKERS=1 npm run bench:scale
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  actionPhase,
  databaseWork,
  ECHO_TOOL_ENV,
  percentile,
  startEchoModel,
  workPerAction,
  type ActionPhase,
} from './lib/action-load.ts';
import { cpuPerRequest, cpuSnapshot, processesCpuSeconds } from './lib/cpu-usage.ts';
import { startDeployment } from './lib/deployment.ts';
import { benchDatabase, fmt, median, percent, postgresReachable, startService } from './lib/harness.ts';
import { seedWebhooks } from './lib/seed.ts';

// Under one process's capacity on a small machine: the comparison is of latency at the same load.
const RATE = Number(process.env.BENCH_RATE ?? 100);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SERVES = Number(process.env.BENCH_SERVES ?? 2);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
/** Rounds of both deployments: on a shared 2-core machine one pair of runs can be off by 2x either way. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

if (!(await postgresReachable())) {
  console.log('scale benchmark: PostgreSQL is not reachable; it runs on PostgreSQL only');
  process.exit(0);
}
const model = await startEchoModel();

interface Measured {
  result: ActionPhase;
  commits: number;
  rowsWritten: number;
  postgresCpuMs: number;
  /** CPU of the service's processes (all of them) per completed action. */
  serviceCpuMs: number;
  /** Share of the machine's CPU left idle during the measured phase. */
  idlePercent: number;
}

/** One deployment on a fresh database: seeded, warmed up, then measured. */
async function measure(
  deploy: (env: Record<string, string>) => Promise<{ urls: string[]; pids: number[]; stop: () => Promise<void> }>,
): Promise<Measured> {
  const database = await benchDatabase('postgres');
  try {
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...database.env,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      ENCRYPTION_MASTER_KEY: 'bench-master-key-0123456789abcdef0123456789',
      RATE_LIMIT_REDIS_URL: REDIS_URL,
      ...model.env,
      WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '100000000',
      ...ECHO_TOOL_ENV,
    };
    const webhooks = await seedWebhooks(env, { orgs: 50, webhooksPerOrg: 10, tool: 'echo' });
    const deployment = await deploy(env);
    const db = new pg.Client({ connectionString: database.env.DATABASE_URL });
    await db.connect();
    try {
      await actionPhase({ urls: deployment.urls, webhooks, rate: RATE, seconds: WARMUP, db });
      const before = {
        work: await databaseWork(db),
        cpu: cpuSnapshot(process.pid),
        service: processesCpuSeconds(deployment.pids),
      };
      const result = await actionPhase({ urls: deployment.urls, webhooks, rate: RATE, seconds: DURATION, db });
      await new Promise((resolve) => setTimeout(resolve, 1500)); // the statistics collector catches up
      const work = workPerAction(before.work, await databaseWork(db), result.completed);
      const cpu = cpuSnapshot(process.pid);
      const serviceCpuMs = ((processesCpuSeconds(deployment.pids) - before.service) * 1000) / result.completed;
      const shares = before.cpu && cpu ? cpuPerRequest(before.cpu, cpu, result.completed) : undefined;
      return {
        result,
        commits: work.commits,
        rowsWritten: work.rowsWritten,
        postgresCpuMs: shares ? shares.postgresUs / 1000 : NaN,
        serviceCpuMs,
        idlePercent: shares?.idlePercent ?? NaN,
      };
    } finally {
      await db.end();
      await deployment.stop();
    }
  } finally {
    await database.drop();
  }
}

function report(label: string, { result, commits, rowsWritten, postgresCpuMs, serviceCpuMs, idlePercent }: Measured) {
  const slow = result.toCompleted.filter((ms) => ms > 1000).length;
  console.log(`${label}`);
  console.log(
    `  actions completed   : ${fmt(result.throughput)}/s (${result.completed} completed, ${result.failed} failed, ${result.unfinished} unfinished; ${result.failures} posts not accepted)`,
  );
  console.log(`  ingest -> running   : p50 ${percentile(result.toRunning, 50)} ms  p99 ${percentile(result.toRunning, 99)} ms`);
  console.log(
    `  ingest -> completed : p50 ${percentile(result.toCompleted, 50)} ms  p99 ${percentile(result.toCompleted, 99)} ms  max ${result.toCompleted.at(-1)} ms; over 1 s: ${slow} (${percent(slow / Math.max(1, result.completed))})`,
  );
  console.log(
    `  within the run      : running -> the tool call p50 ${percentile(result.runningToToolCall, 50)} ms, the tool call -> completed p50 ${percentile(result.toolCallToCompleted, 50)} ms`,
  );
  console.log(
    `  database per action : ${commits.toFixed(1)} commits, ${rowsWritten.toFixed(1)} rows written, ${postgresCpuMs.toFixed(2)} ms of PostgreSQL CPU, ${serviceCpuMs.toFixed(2)} ms of the service's; machine idle ${Math.round(idlePercent)}%`,
  );
}

const deployments = {
  single: {
    label: '1 process (serve with workers)',
    deploy: async (env: Record<string, string>) => {
      const service = await startService(env);
      return { urls: [service.url], pids: [service.pid], stop: service.stop };
    },
  },
  multi: {
    label: `${SERVES} serve (RUN_WORKERS=false) + ${WORKERS} worker processes, posts round-robin over the serves`,
    deploy: async (env: Record<string, string>) => {
      const deployment = await startDeployment({
        env,
        serves: SERVES,
        workers: WORKERS,
        logFile: join(mkdtempSync(join(tmpdir(), 'ap-scale-')), 'processes.log'),
      });
      return { urls: deployment.serves.map((serve) => serve.url!), pids: deployment.pids(), stop: () => deployment.stop() };
    },
  },
};

try {
  console.log(
    `scale benchmark: ${RATE} events/s for ${DURATION} s (after ${WARMUP} s of warm-up), ${ROUNDS} rounds, PostgreSQL + Redis limits, model answering at once, node ${process.version}`,
  );
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round measures both, in turns: a machine that slows down or speeds up weighs on both alike.
    const order = round % 2 === 1 ? (['single', 'multi'] as const) : (['multi', 'single'] as const);
    const measured: Partial<Record<keyof typeof deployments, Measured>> = {};
    for (const name of order) {
      measured[name] = await measure(deployments[name].deploy);
      report(`round ${round}, ${deployments[name].label}:`, measured[name]);
    }
    const ratio = percentile(measured.multi!.result.toCompleted, 50) / percentile(measured.single!.result.toCompleted, 50);
    ratios.push(ratio);
    console.log(`round ${round}: multi-process p50 ingest -> completed = ${ratio.toFixed(2)}x the single process`);
  }
  console.log(
    `multi-process p50 ingest -> completed = ${median(ratios).toFixed(2)}x the single process, median of ${ROUNDS} rounds (${ratios.map((ratio) => `${ratio.toFixed(2)}x`).join(', ')}; target <= 1.2x)`,
  );
} finally {
  await model.close();
}
