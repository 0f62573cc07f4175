/**
 * Email benchmark, on PostgreSQL: `email.received` notifications (each email with one small
 * attachment) posted at a fixed rate to POST /webhooks/mail, signed as the provider signs them, over
 * 10 orgs' inboxes. The provider (Resend's API) and the model are loopback fakes that answer at once;
 * every email is answered by its inbox's agent with sendEmail.
 *
 * Two phases, each after BENCH_WARMUP seconds (3) of warm-up that are not counted:
 * - acknowledgement: BENCH_ACK_RATE (200)/s for BENCH_DURATION (10) s; acknowledged per second and
 *   the p99 of the acknowledgement, next to a bare Node HTTP server posted to the same way (baseline);
 * - reply: BENCH_REPLY_RATE (50)/s; p50/p99 from posting the notification to the reply reaching the provider.
 *
 * BENCH_PROCESSES=2 (the default) runs the deployment PostgreSQL allows: a `serve` process that only
 * acknowledges (RUN_WORKERS=false) and a worker process that processes and answers; 1 runs both in
 * one process, as the embedded default does.
 *
 * The whole of it runs BENCH_RUNS (3) times, each on a fresh database with fresh processes (so that
 * every run's tables grow as one run's did); each run is printed, then the medians of the runs.
 *
 *   npm run bench:email
 */
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadConfig } from '../server/src/config.ts';
import { createContainer } from '../server/src/container.ts';
import { agentInput } from '../server/src/features/agents/agents.schemas.ts';
import { postSignedNotification, startFakeMailProvider } from '../server/test/helpers/fake-mail-provider.ts';
import { calledTools, eventData, startFakeModel } from '../server/test/helpers/fake-model.ts';
import { cpuPerRequest, cpuSnapshot } from './lib/cpu-usage.ts';
import { benchDatabase, fmt, median, postgresReachable, startBareServer, startService, startWorker } from './lib/harness.ts';

const ACK_RATE = Number(process.env.BENCH_ACK_RATE ?? 200);
const REPLY_RATE = Number(process.env.BENCH_REPLY_RATE ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const ORGS = 10;
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 2);
/** Whole runs (fresh database and processes each): one run on a shared 2-core machine swings by half. */
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const MASTER_KEY = 'bench-master-key-0123456789abcdef0123456789';
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

if (!(await postgresReachable())) {
  console.log('email benchmark: PostgreSQL is not reachable; it runs on PostgreSQL only');
  process.exit(0);
}
/**
 * The loopback fakes of the provider and the model, new for each run: the provider keeps every email
 * and attachment it saw and looks some up by scanning them, so one kept across runs slowed the
 * machine a little more with each run.
 */
let provider: Awaited<ReturnType<typeof startFakeMailProvider>>;
let model: Awaited<ReturnType<typeof startFakeModel>>;
async function startFakes() {
  provider = await startFakeMailProvider();
  model = await startFakeModel(undefined, { keepRequests: false });
  model.script((request) =>
    calledTools(request)
      ? { text: 'Replied.' }
      : {
          toolCalls: [
            { name: 'sendEmail', arguments: { to: eventData(request).from, subject: 'x', body: 'Thanks, we are on it.' } },
          ],
        },
  );
}
let next = 0;

/** Orgs with an integration (their own key and domain), an agent, an inbox, and the agent answering it; through the services. */
async function seedInboxes(env: Record<string, string>) {
  const container = await createContainer(loadConfig({ ...env, LOG_LEVEL: 'warn' }));
  try {
    await container.database.migrate();
    await container.jobs.start();
    const { orgs, users, agents, emailIntegration, inboxes } = container.services;
    const seeded = [];
    for (let o = 0; o < ORGS; o++) {
      const org = await orgs.create(`mail-${o}`, `Mail ${o}`);
      const admin = await users.create({ email: `admin-${o}@bench.example`, role: 'Admin', provider: 'credentials' });
      await orgs.addMember(org.slug, admin.email);
      const apiKey = `re_bench_${o}`;
      const domain = `mail-${o}.bench.example`;
      provider.addKey(apiKey, { domains: [{ name: domain }] });
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      await emailIntegration.save(org.id, { apiKey, fromEmail: `agents@${domain}`, fromName: 'Bench', webhookSecret: secret });
      const agent = await agents.createAgent(
        org.id,
        agentInput.parse({ name: 'Answerer', instructions: 'Answer.', tools: [] }),
        admin.id,
      );
      const inbox = await inboxes.create(org.id, { emailAddress: `help@${domain}`, displayName: 'Help' });
      await inboxes.assign(org.id, inbox.id, admin.id, {
        agentId: agent.id,
        isPrimary: true,
        autoRespond: true,
        approvalRules: null,
        argumentRules: [],
        approvers: null,
        minApprovals: 1,
        notify: [],
      });
      seeded.push({ address: inbox.emailAddress, secret });
    }
    return seeded;
  } finally {
    await container.close();
  }
}

/** One run on a fresh database, service and worker: what it printed, as numbers. */
async function run() {
  await startFakes();
  const database = await benchDatabase('postgres');
  try {
    const env = {
      ...database.env,
      ENCRYPTION_MASTER_KEY: MASTER_KEY,
      NODE_ENV: 'development',
      MAIL_API_URL: provider.url,
      MAIL_API_RETRIES: '0',
    };
    const inboxes = await seedInboxes(env);
    const service = await startService({ ...env, ...model.env, RUN_WORKERS: PROCESSES === 1 ? 'true' : 'false' });
    // The worker process (`worker`: jobs only, at its default WORKER_NICENESS), started after a first
    // acknowledgement phase that shows the serve process on its own.
    let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
    const bare = await startBareServer();

    /** Posts notifications at `rate` for `seconds` (open loop) to `url`; with `replies`, waits for each email's answer. */
    async function phase(url: string, rate: number, seconds: number, replies: boolean) {
      const acks: number[] = [];
      const toReply: number[] = [];
      let failures = 0;
      const post = async () => {
        const n = next++;
        const inbox = inboxes[n % inboxes.length]!;
        const customer = `customer-${n}@bench-customer.example`;
        const received = provider.receive({
          from: customer,
          to: [inbox.address],
          subject: `Question ${n}`,
          text: 'Where is my order?',
          attachments: [{ filename: 'receipt.txt', contentType: 'text/plain', content: Buffer.alloc(512, 'r') }],
        });
        const answered = replies ? provider.waitFor(customer, 120_000) : undefined;
        const started = performance.now();
        try {
          const response = await postSignedNotification({ url, secret: inbox.secret }, provider.receivedEvent(received.id));
          await response.arrayBuffer();
          if (response.status !== 200) failures++;
          else acks.push(performance.now() - started);
          if (answered) {
            await answered;
            toReply.push(performance.now() - started);
          }
        } catch {
          failures++;
        }
      };
      const inFlight: Array<Promise<void>> = [];
      // The client's own event loop: a response it reads late counts as the server's latency.
      const clientLag = monitorEventLoopDelay({ resolution: 1 });
      clientLag.enable();
      const begin = performance.now();
      const total = Math.round(seconds * rate);
      let sent = 0;
      while (sent < total) {
        const due = Math.min(total, Math.floor(((performance.now() - begin) / 1000) * rate));
        for (; sent < due; sent++) inFlight.push(post());
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const offeredFor = (performance.now() - begin) / 1000;
      await Promise.all(inFlight);
      clientLag.disable();
      acks.sort((a, b) => a - b);
      toReply.sort((a, b) => a - b);
      return {
        offered: sent / offeredFor,
        sent,
        failures,
        acked: acks.length,
        ackP50: percentile(acks, 50),
        ackP99: percentile(acks, 99),
        replyP50: percentile(toReply, 50),
        replyP99: percentile(toReply, 99),
        replied: toReply.length,
        clientLagP99: clientLag.percentile(99) / 1e6,
      };
    }

    try {
      await phase(`${bare.url}/webhooks/mail`, ACK_RATE, WARMUP, false);
      const baseline = await phase(`${bare.url}/webhooks/mail`, ACK_RATE, DURATION, false);
      /** Until the acknowledged ones are answered (no new reply for 2 s, or 3 min). */
      const settle = async () => {
        for (const start = Date.now(); Date.now() - start < 180_000; ) {
          const before = provider.sent.length;
          await new Promise((resolve) => setTimeout(resolve, 2000));
          if (provider.sent.length === before) break;
        }
      };
      let alone: Awaited<ReturnType<typeof phase>> | undefined;
      if (PROCESSES === 2) {
        await phase(`${service.url}/webhooks/mail`, ACK_RATE, WARMUP, false);
        alone = await phase(`${service.url}/webhooks/mail`, ACK_RATE, DURATION, false);
        worker = await startWorker({ ...env, ...model.env });
        await settle();
      }
      await phase(`${service.url}/webhooks/mail`, ACK_RATE, WARMUP, false);
      const ack = await phase(`${service.url}/webhooks/mail`, ACK_RATE, DURATION, false);
      await settle();
      await phase(`${service.url}/webhooks/mail`, REPLY_RATE, WARMUP, true);
      const processPids = [service.pid, ...(worker ? [worker.pid] : [])];
      const before = processPids.map((pid) => cpuSnapshot(pid));
      const reply = await phase(`${service.url}/webhooks/mail`, REPLY_RATE, DURATION, true);
      const after = processPids.map((pid) => cpuSnapshot(pid));

      const ms = (value: number) => `${value.toFixed(1)} ms`;
      console.log(
        `bare Node HTTP        : ${fmt(baseline.acked / DURATION).padStart(5)} acks/s  p50 ${ms(baseline.ackP50)}  p99 ${ms(baseline.ackP99)}  (baseline, same client; its event loop's delay p99 ${ms(baseline.clientLagP99)})`,
      );
      if (alone) {
        console.log(
          `POST /webhooks/mail   : ${fmt(alone.acked / DURATION).padStart(5)} acks/s  p50 ${ms(alone.ackP50)}  p99 ${ms(alone.ackP99)}  (serve process alone: workers elsewhere; ${alone.failures} not 200; client delay p99 ${ms(alone.clientLagP99)})`,
        );
      }
      console.log(
        `POST /webhooks/mail   : ${fmt(ack.acked / DURATION).padStart(5)} acks/s  p50 ${ms(ack.ackP50)}  p99 ${ms(ack.ackP99)}  (while this machine also answers them; ${ack.failures} not 200; client delay p99 ${ms(ack.clientLagP99)}; target p99 < 50 ms at 200/s)`,
      );
      console.log(
        `                        p99 is ${alone ? `${(alone.ackP99 / baseline.ackP99).toFixed(1)}x (alone) and ` : ''}${(ack.ackP99 / baseline.ackP99).toFixed(1)}x the bare server's`,
      );
      console.log(
        `notification -> reply : p50 ${ms(reply.replyP50)}  p99 ${ms(reply.replyP99)} at ${fmt(reply.offered)}/s (${reply.replied}/${reply.sent} answered, ${reply.failures} failed; target p50 < 500 ms at 50/s)`,
      );
      const cpu = processPids.map((_, index) =>
        before[index] && after[index] ? cpuPerRequest(before[index], after[index], reply.sent) : undefined,
      );
      if (cpu.every(Boolean)) {
        const serverMs = cpu.map((usage) => (usage!.serverUs / 1000).toFixed(1));
        console.log(
          `CPU per answered email: ${PROCESSES === 1 ? `server ${serverMs[0]} ms` : `serve ${serverMs[0]} ms + worker ${serverMs[1]} ms`}, PostgreSQL ${(cpu[0]!.postgresUs / 1000).toFixed(1)} ms; machine idle ${cpu[0]!.idlePercent}% (reply phase)`,
        );
      }
      console.log(`emails sent by agents : ${provider.sent.length} (this run)`);
      return {
        ackP99: ack.ackP99,
        aloneP99: alone?.ackP99,
        replyP50: reply.replyP50,
        // The worker's CPU (the serve's when one process does both), and PostgreSQL's, per answered email.
        workerMs: cpu.every(Boolean) ? cpu.at(-1)!.serverUs / 1000 : NaN,
        postgresMs: cpu.every(Boolean) ? cpu[0]!.postgresUs / 1000 : NaN,
      };
    } finally {
      await bare.stop();
      await service.stop();
      await worker?.stop();
    }
  } finally {
    await database.drop();
    await provider.close();
    await model.close();
  }
}

console.log(
  `email benchmark: ${ACK_RATE} notifications/s (acknowledgement) and ${REPLY_RATE}/s (reply) for ${DURATION} s each, ${ORGS} orgs, one 512-byte attachment per email, ${PROCESSES === 1 ? 'one process' : 'a serve process and a worker process'}, ${RUNS} run${RUNS > 1 ? 's' : ''}, node ${process.version}`,
);
const runs: Array<Awaited<ReturnType<typeof run>>> = [];
for (let n = 1; n <= RUNS; n++) {
  if (RUNS > 1) console.log(`run ${n}:`);
  runs.push(await run());
}
if (RUNS > 1) {
  const line = (name: string, values: number[], target: string) =>
    console.log(
      `${name.padEnd(22)}: ${median(values).toFixed(1)} ms (runs: ${values.map((value) => value.toFixed(1)).join(', ')}; ${target})`,
    );
  console.log(`median of ${RUNS} runs`);
  type Result = (typeof runs)[number];
  const figures: Array<[string, (result: Result) => number, string]> = [
    ['ack p99, serve alone', (result) => result.aloneP99 ?? NaN, 'for comparison'],
    ['ack p99, beside worker', (result) => result.ackP99, 'target < 50 ms'],
    ['reply p50', (result) => result.replyP50, 'target < 500 ms'],
    [`${PROCESSES === 2 ? 'worker' : 'server'} CPU / email`, (result) => result.workerMs, 'target <= 3 ms'],
    ['PostgreSQL CPU / email', (result) => result.postgresMs, 'for comparison'],
  ];
  for (const [name, of, target] of figures) if (PROCESSES === 2 || !name.includes('alone')) line(name, runs.map(of), target);
}
