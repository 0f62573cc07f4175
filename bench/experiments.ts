/**
 * Experiments benchmark: do replays delay live actions? Live actions arrive at BENCH_RATE (100/s) for
 * BENCH_DURATION (10 s) and their p50 from ingest to completion is measured twice on one service, in
 * one run: alone, then while an experiment replays 500 past actions of the same agent. The model
 * answers every call (live or replayed) after BENCH_MODEL_DELAY_MS (100 ms), as a remote model would
 * take time, so that the experiment is still replaying when the phase ends (printed). On PostgreSQL.
 *
 *   npm run bench:experiments
 */
import pg from 'pg';
import { actionPhase, ECHO_TOOL_ENV, percentile, startEchoModel } from './lib/action-load.ts';
import { cpuPerRequest, cpuSnapshot } from './lib/cpu-usage.ts';
import { benchDatabase, fmt, postgresReachable, startService } from './lib/harness.ts';
import { seedSession, seedWebhooks } from './lib/seed.ts';

const RATE = Number(process.env.BENCH_RATE ?? 100);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const MODEL_DELAY_MS = Number(process.env.BENCH_MODEL_DELAY_MS ?? 100);
const REPLAYED = 500;
const MASTER_KEY = 'bench-master-key-0123456789abcdef0123456789';

if (!(await postgresReachable())) {
  console.log('experiments benchmark: PostgreSQL is not reachable; it runs on PostgreSQL only');
  process.exit(0);
}
const model = await startEchoModel(MODEL_DELAY_MS);
const database = await benchDatabase('postgres');
try {
  const env = { ...database.env, ENCRYPTION_MASTER_KEY: MASTER_KEY, NODE_ENV: 'development', ...ECHO_TOOL_ENV };
  // One agent, whose history the experiment replays, behind 20 webhooks.
  const webhooks = await seedWebhooks(env, { orgs: 1, webhooksPerOrg: 20, tool: 'echo' });
  const token = await seedSession(env);
  const service = await startService({ ...env, ...model.env, WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '100000000' });
  const db = new pg.Client({ connectionString: database.env.DATABASE_URL });
  await db.connect();
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const phase = (rate: number, seconds: number) => actionPhase({ urls: [service.url], webhooks, rate, seconds, db });
  try {
    console.log(
      `experiments benchmark: live actions at ${RATE}/s for ${DURATION} s, alone and beside an experiment of ${REPLAYED} ` +
        `past actions; model answers after ${MODEL_DELAY_MS} ms; EXPERIMENT_CONCURRENCY default; node ${process.version}`,
    );
    const history = await phase(200, 3);
    console.log(`history (not counted) : ${history.completed} actions completed, the experiment's past actions`);
    await phase(RATE, 3); // warm-up at the measured rate

    const report = (label: string, result: Awaited<ReturnType<typeof phase>>, cpu: ReturnType<typeof cpuPerRequest> | null) =>
      console.log(
        `${label.padEnd(22)}: p50 ${percentile(result.toCompleted, 50)} ms  p99 ${percentile(result.toCompleted, 99)} ms  ` +
          `(${result.completed} completed, ${result.failed} failed, ${result.unfinished} unfinished)` +
          (cpu ? `; server CPU ${(cpu.serverUs / 1000).toFixed(2)} ms per live action, machine idle ${cpu.idlePercent}%` : ''),
      );
    const measured = async () => {
      const before = cpuSnapshot(service.pid);
      const result = await phase(RATE, DURATION);
      const after = cpuSnapshot(service.pid);
      return { result, cpu: before && after ? cpuPerRequest(before, after, result.completed) : null };
    };
    const alone = await measured();
    report('live alone', alone.result, alone.cpu);

    const [agent] = (await api('GET', '/orgs/bench-0/agents')).agents;
    const { experiment } = await api('POST', `/orgs/bench-0/agents/${agent.id}/experiments`, {
      version: agent.liveVersion,
      limit: REPLAYED,
    });
    const progress = async () => (await api('GET', `/orgs/bench-0/experiments/${experiment.id}?limit=1`)).experiment;
    const atStart = await progress();
    const beside = await measured();
    const atEnd = await progress();
    report('live + experiment', beside.result, beside.cpu);
    console.log(
      `experiment            : ${atStart.progress.done} of ${atStart.progress.total} replayed at the phase's start, ` +
        `${atEnd.progress.done} at its end (${atEnd.state}${atEnd.state === 'running' ? ': it ran through the whole phase' : ''})`,
    );
    const ratio = percentile(beside.result.toCompleted, 50) / percentile(alone.result.toCompleted, 50);
    console.log(`p50 with / without    : ${ratio.toFixed(2)}x (target <= 1.2x)`);
    if (atEnd.state === 'running') await api('POST', `/orgs/bench-0/experiments/${experiment.id}/cancel`);
    console.log(`model requests        : ${fmt(model.requestCount())} (history and warm-up included)`);
  } finally {
    await db.end();
    await service.stop();
  }
} finally {
  await database.drop();
  await model.close();
}
