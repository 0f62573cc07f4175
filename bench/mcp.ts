/**
 * MCP benchmark: the load of bench:actions (signed events over 500 webhooks in 50 orgs, a model that
 * answers at once: one `allow` tool call, then a closing text), once with a built-in tool and once
 * with a tool of an MCP server on loopback in a process of its own (each org connects it), on
 * PostgreSQL. Each deployment is measured at a rate under capacity (latency) and at one above it
 * (throughput). The pair runs BENCH_ROUNDS (3) times in turns, each on fresh databases and fresh
 * services, and the last lines are the medians of the rounds' figures: one pair on this shared
 * machine can differ by more than the MCP call costs.
 *
 *   npm run bench:mcp        # BENCH_LATENCY_RATE=100 and BENCH_RATE=600 events/s, BENCH_DURATION=10 s each
 *
 * Targets: an MCP tool call adds under 5 ms at p50, and keeps at least 70% of the built-in tool's throughput.
 */
import { startFakeModel, toolResults } from '../server/test/helpers/fake-model.ts';
import pg from 'pg';
import { actionPhase, ECHO_TOOL_ENV, percentile, type ActionPhase } from './lib/action-load.ts';
import { cpuPerRequest, cpuSnapshot, processesCpuSeconds } from './lib/cpu-usage.ts';
import { benchDatabase, fmt, median, postgresReachable, startService } from './lib/harness.ts';
import { forkEchoMcpServer } from './lib/mcp-echo-server.ts';
import { seedWebhooks } from './lib/seed.ts';

const RATE = Number(process.env.BENCH_RATE ?? 600);
const LATENCY_RATE = Number(process.env.BENCH_LATENCY_RATE ?? 100);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MASTER_KEY = 'bench-master-key-0123456789abcdef0123456789';

if (!(await postgresReachable())) {
  console.log('MCP benchmark: PostgreSQL is not reachable; it runs on PostgreSQL only');
  process.exit(0);
}
// The model calls the one tool it is offered, whichever it is.
const model = await startFakeModel(undefined, { keepRequests: false });
model.script((request) =>
  toolResults(request).length > 0
    ? { text: 'done' }
    : { toolCalls: [{ name: request.tools![0]!.function.name, arguments: { text: 'hello' } }] },
);
// BENCH_MCP_IDEMPOTENT=1: the tool says it is idempotent, so calls are not recorded as started first.
const IDEMPOTENT = process.env.BENCH_MCP_IDEMPOTENT === '1';
const mcp = await forkEchoMcpServer({ idempotent: IDEMPOTENT });

/** A phase's load, with the CPU each of its actions cost the server, PostgreSQL, the MCP server and this process. */
async function measuredPhase(servicePid: number, run: () => Promise<ActionPhase>) {
  const before = cpuSnapshot(servicePid);
  const mcpBefore = processesCpuSeconds([mcp.pid]);
  const ownBefore = process.cpuUsage();
  const result = await run();
  const after = cpuSnapshot(servicePid);
  const perAction = (seconds: number) => ((seconds * 1000) / result.completed).toFixed(2);
  const own = process.cpuUsage(ownBefore);
  const cpu = before && after ? cpuPerRequest(before, after, result.completed) : undefined;
  const split = cpu
    ? `CPU per action: server ${(cpu.serverUs / 1000).toFixed(2)} ms, PostgreSQL ${(cpu.postgresUs / 1000).toFixed(2)} ms, MCP server ${perAction(processesCpuSeconds([mcp.pid]) - mcpBefore)} ms, this benchmark's process ${perAction((own.user + own.system) / 1e6)} ms (the client and the model); machine idle ${cpu.idlePercent}%`
    : '';
  return { result, split };
}

async function measure(label: string, tool: string): Promise<{ latency: ActionPhase; capacity: ActionPhase }> {
  const database = await benchDatabase('postgres');
  try {
    const env = {
      ...database.env,
      ENCRYPTION_MASTER_KEY: MASTER_KEY,
      NODE_ENV: 'development',
      ...ECHO_TOOL_ENV,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
    };
    const webhooks = await seedWebhooks(env, {
      orgs: 50,
      webhooksPerOrg: 10,
      tool,
      ...(tool.includes('__') ? { mcpServer: { name: 'bench', url: mcp.url } } : {}),
    });
    const service = await startService({ ...env, ...model.env, WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '100000000' });
    const db = new pg.Client({ connectionString: database.env.DATABASE_URL });
    await db.connect();
    try {
      const phase = (rate: number, seconds: number) => actionPhase({ urls: [service.url], webhooks, rate, seconds, db });
      await phase(LATENCY_RATE, WARMUP);
      const latency = await measuredPhase(service.pid, () => phase(LATENCY_RATE, DURATION));
      const capacity = await measuredPhase(service.pid, () => phase(RATE, DURATION));
      for (const [name, { result, split }] of [
        [`${LATENCY_RATE}/s`, latency],
        [`${RATE}/s`, capacity],
      ] as const) {
        console.log(
          `${label.padEnd(14)} at ${name.padEnd(6)}: ${fmt(result.throughput).padStart(5)} actions/s  p50 ${percentile(result.toCompleted, 50)} ms  p99 ${percentile(result.toCompleted, 99)} ms  (${result.completed} completed, ${result.failed} failed, ${result.failures} not accepted)`,
        );
        if (split) console.log(`${''.padEnd(25)}${split}`);
      }
      return { latency: latency.result, capacity: capacity.result };
    } finally {
      await db.end();
      await service.stop();
    }
  } finally {
    await database.drop();
  }
}

try {
  console.log(
    `MCP benchmark: one allow tool call per action, over 500 webhooks in 50 orgs; ${LATENCY_RATE}/s and ${RATE}/s for ${DURATION} s each (after ${WARMUP} s of warm-up), ${ROUNDS} rounds, node ${process.version}`,
  );
  const rounds: Array<{ added: number; ratio: number }> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`\n-- round ${round} of ${ROUNDS}`);
    const builtIn = await measure('built-in tool', 'echo');
    const viaMcp = await measure(IDEMPOTENT ? 'MCP idempotent' : 'MCP tool', 'bench__echo');
    const result = {
      added: percentile(viaMcp.latency.toCompleted, 50) - percentile(builtIn.latency.toCompleted, 50),
      ratio: viaMcp.capacity.throughput / builtIn.capacity.throughput,
    };
    rounds.push(result);
    console.log(
      `MCP against built-in: p50 ${result.added >= 0 ? '+' : ''}${result.added.toFixed(1)} ms at ${LATENCY_RATE}/s, throughput ${result.ratio.toFixed(2)} at ${RATE}/s offered`,
    );
  }
  const list = (key: keyof (typeof rounds)[number], digits: number) =>
    `${median(rounds.map((round) => round[key])).toFixed(digits)} (rounds: ${rounds.map((round) => round[key].toFixed(digits)).join(', ')})`;
  console.log(`\nmedian of ${ROUNDS} rounds`);
  console.log(`p50 added by the MCP call at ${LATENCY_RATE}/s: ${list('added', 1)} ms; target < 5 ms`);
  console.log(`throughput, MCP / built-in at ${RATE}/s offered: ${list('ratio', 2)}; target >= 0.70`);
  const { calls, sessions } = await mcp.counts();
  console.log(`MCP server: ${calls} calls over ${sessions} sessions (one per org's server per process, opened on first use)`);
} finally {
  await mcp.close();
  await model.close();
}
