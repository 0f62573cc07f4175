import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventData, startFakeModel, toolResults } from '../../server/test/helpers/fake-model.ts';
import { setCookies } from '../../server/test/helpers/http.ts';
import { benchDatabase } from './harness.ts';
import { checkSoak, unsettled, type SoakFigure } from './soak-checks.ts';
import { startDeployment } from './deployment.ts';
import { createApprover, createSender, startReceiver, type SoakWebhook } from './soak-traffic.ts';
import { SOAK_EFFECTS_TABLE } from './soak-tools.ts';

export interface SoakOptions {
  durationSeconds: number;
  /** New external ids per second (some are sent twice). */
  rate: number;
  /** A random process is stopped (SIGKILL, or one time in three SIGTERM) and restarted this often. */
  killEverySeconds: number;
  /**
   * The load goes on past durationSeconds until this many processes were stopped (default 0): on a
   * slow machine a restart under load takes longer than killEverySeconds, and fewer stops would fit.
   */
  minStops?: number;
  serves: number;
  workers: number;
  /** How long the soak waits, after the load, for every action and callback to settle. */
  settleSeconds: number;
  redisUrl: string;
  /** The PostgreSQL server the soak makes its database on (an admin connection URL). */
  postgresUrl?: string;
  print: (line: string) => void;
}

export interface SoakReport {
  figures: SoakFigure[];
  kills: string[];
  /** Graceful stops, each with how the process exited (0 when it drained). */
  terms: Array<{ name: string; exit: number | string }>;
  ok: boolean;
  logFile: string;
}

const CLI = join(import.meta.dirname, '..', '..', 'server', 'src', 'cli.ts');

/**
 * The soak of issue 19: a multi-process deployment on PostgreSQL (and Redis for limits) under a
 * steady signed load, with a random process SIGKILLed and restarted every few seconds; at the end it
 * waits for quiescence and checks that nothing was lost, duplicated or done twice.
 */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { print } = options;
  const database = await benchDatabase('postgres', options.postgresUrl);
  const logFile = join(mkdtempSync(join(tmpdir(), 'ap-soak-')), 'processes.log');
  const model = await startFakeModel(undefined, { keepRequests: false });
  // An `allow` tool or an `ask` one by the event's kind, then a closing text; answers take up to 150 ms, so kills land mid-run.
  model.script((request) => {
    const delayMs = Math.floor(Math.random() * 150);
    if (toolResults(request).length > 0) return { text: 'done', delayMs };
    const data = eventData(request);
    return {
      toolCalls: [{ name: data.kind === 'ask' ? 'soak_transfer' : 'soak_record', arguments: { key: data.key } }],
      delayMs,
    };
  });
  const receiver = await startReceiver(0.1);
  const admin = new pg.Client({ connectionString: database.env.DATABASE_URL });
  await admin.connect();
  await admin.query(SOAK_EFFECTS_TABLE);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    ...database.env,
    ENCRYPTION_MASTER_KEY: 'soak-master-key-0123456789abcdef0123456789',
    RATE_LIMIT_REDIS_URL: options.redisUrl,
    ...model.env,
    TOOL_MODULES: join(import.meta.dirname, 'soak-tools.ts'),
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    CALLBACK_RETRY_SCHEDULE: '0.2,0.5,1,1,2,2,2,2,2,2',
    CALLBACK_TIMEOUT_SECONDS: '5',
    // Short leases: a killed runner's actions are taken over within seconds.
    ACTION_LEASE_SECONDS: '3',
    WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '1000000',
  };
  const deployment = await startDeployment({ env, serves: options.serves, workers: options.workers, logFile });
  const kills: string[] = [];
  const terms: Array<{ name: string; exit: number | string }> = [];
  try {
    // The org, its admin and its webhooks, made as an operator would: CLI, then the API.
    for (const args of [
      ['orgs', 'create', '--slug', 'soak', '--name', 'Soak'],
      ['users', 'create', '--email', 'ops@soak.example', '--password', 'a long password', '--role', 'Admin', '--org', 'soak'],
    ]) {
      const run = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`cli ${args.join(' ')} failed: ${run.stderr}`);
    }
    const base = deployment.serves[0]!.url!;
    const login = await fetch(`${base}/auth/login/credentials`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ops@soak.example', password: 'a long password' }),
    });
    const token = setCookies(login).get('session')!.value;
    const api = async (method: string, path: string, body?: unknown): Promise<any> => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    const me = await api('GET', '/auth/me');
    const agent = await api('POST', '/orgs/soak/agents', { name: 'Soak agent', tools: ['soak_record', 'soak_transfer'] });
    const rule = await api('POST', '/orgs/soak/action-rules', {
      name: 'Soak rule',
      agentId: agent.id,
      approvalRules: { soak_record: 'allow', soak_transfer: 'ask' },
    });
    const webhooks: SoakWebhook[] = [];
    for (let i = 0; i < 4; i++) {
      const created = await api('POST', '/orgs/soak/webhooks', {
        name: `soak ${i}`,
        actionRuleId: rule.id,
        runAsUserId: me.id,
        rateLimitPerMinute: 1000,
      });
      const endpoint = await api('POST', `/orgs/soak/webhooks/${created.webhook.id}/callbacks`, {
        url: `${receiver.url}/endpoints/${i}`,
      });
      webhooks.push({
        id: created.webhook.id,
        path: new URL(created.url).pathname,
        secret: created.secret,
        endpointId: endpoint.id,
      });
    }

    const sender = createSender({ serves: deployment.serves, webhooks, askShare: 0.2, twiceShare: 0.1, concurrentShare: 0.05 });
    const approver = createApprover({ serves: deployment.serves, token, org: 'soak' });
    print(
      `soak: ${options.serves} serve + ${options.workers} worker processes on PostgreSQL with Redis limits; ${options.rate} external ids/s for ${options.durationSeconds} s; a process stopped every ${options.killEverySeconds} s (SIGKILL, or SIGTERM one time in three) and restarted; receiver answers 500 to 10%`,
    );

    let loadRunning = true;
    const inFlight = new Set<Promise<void>>();
    const load = (async () => {
      const begin = Date.now();
      let started = 0;
      const stops = () => kills.length + terms.length;
      while (Date.now() - begin < options.durationSeconds * 1000 || stops() < (options.minStops ?? 0)) {
        const due = Math.floor(((Date.now() - begin) / 1000) * options.rate);
        for (; started < due; started++) {
          const sending = sender.sendOne().finally(() => inFlight.delete(sending));
          inFlight.add(sending);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      loadRunning = false;
      await Promise.all(inFlight);
    })();
    const approving = (async () => {
      while (loadRunning) {
        await approver.sweep().catch(() => 0);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
    // Most stops are crashes (SIGKILL); one in three is a deploy's graceful stop (SIGTERM), which must drain and exit 0.
    const killing = (async () => {
      while (loadRunning) {
        await new Promise((resolve) => setTimeout(resolve, options.killEverySeconds * 1000));
        if (!loadRunning) break;
        const victim = deployment.processes[Math.floor(Math.random() * deployment.processes.length)]!;
        const signal = Math.random() < 1 / 3 ? 'SIGTERM' : 'SIGKILL';
        print(`  ${new Date().toISOString().slice(11, 19)} ${signal} ${victim.name}`);
        const exit = await deployment.restart(victim, { signal, downMs: 300 + Math.random() * 700 });
        if (signal === 'SIGKILL') kills.push(victim.name);
        else terms.push({ name: victim.name, exit });
      }
    })();
    await Promise.all([load, approving, killing]);

    // Quiescence: approvals keep being given until nothing moves.
    print('load over; waiting for every action and callback to settle');
    const settleStart = Date.now();
    const deadline = settleStart + options.settleSeconds * 1000;
    let state = await unsettled(admin);
    while (Date.now() < deadline && (state.actions > 0 || state.approvals > 0 || state.callbacks > 0)) {
      await approver.sweep().catch(() => 0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      state = await unsettled(admin);
    }
    print(
      `after ${((Date.now() - settleStart) / 1000).toFixed(1)} s: ${state.actions} actions moving, ${state.approvals} awaiting approval, ${state.callbacks} callbacks pending; ${approver.approved} approvals given`,
    );
    const figures = await checkSoak(admin, sender.sent, receiver.receipts, { jobsSchema: 'pgboss' });
    const undrained = terms.filter((term) => term.exit !== 0).length;
    figures.unshift(
      { name: 'processes killed (SIGKILL)', value: kills.length, ok: true },
      { name: 'processes stopped (SIGTERM)', value: terms.length, ok: true },
      { name: 'SIGTERM stops that did not drain and exit 0 within 30 s', value: undrained, ok: undrained === 0 },
    );
    for (const figure of figures) print(`  ${figure.ok ? 'ok  ' : 'FAIL'} ${figure.name}: ${figure.value}`);
    return { figures, kills, terms, ok: figures.every((figure) => figure.ok), logFile };
  } finally {
    await deployment.stop();
    await admin.end();
    await receiver.close();
    await model.close();
    await database.drop();
  }
}
