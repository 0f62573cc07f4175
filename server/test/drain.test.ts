import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingHeaders } from '../src/features/ingest/verification.ts';
import { eventually } from './helpers/eventually.ts';
import { startFakeModel, toolResults } from './helpers/fake-model.ts';
import { freePort } from './helpers/http.ts';
import {
  apiClient,
  createWebhookThroughApi,
  endsWithTest,
  postSignedEvent,
  serverProcessEnvironment,
  startServerProcess,
} from './helpers/server-process.ts';

const CLI = join(import.meta.dirname, '../src/cli.ts');
const onPostgres = process.env.TEST_DB === 'postgres';

let model: Awaited<ReturnType<typeof startFakeModel>>;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
beforeAll(async () => {
  if (!onPostgres) return;
  model = await startFakeModel();
  // A lease of ten minutes: an action continues elsewhere within this test only if it is handed over, not left to lapse.
  environment = await serverProcessEnvironment({
    ...model.env,
    ACTION_LEASE_SECONDS: '600',
    WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '1000000',
  });
});
afterAll(async () => {
  await environment?.cleanup();
  await model?.close();
});

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

function startWorker(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = endsWithTest(
    spawn(process.execPath, [CLI, 'worker'], {
      env: { ...env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return { child, output: () => output };
}

/**
 * SIGTERM drains: several processes on one PostgreSQL (a worker needs a database other processes
 * share). Processes started, loaded and stopped beside the other test files on 2 cores take a while.
 */
describe.runIf(onPostgres)('SIGTERM drains a process without losing what it acknowledged', { timeout: 120_000 }, () => {
  it('a serve process under load answers what it has read, then exits 0; every acknowledged event is in the ledger', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = await startServerProcess({ ...environment.env, RUN_WORKERS: 'false' }, port);
    const api = await apiClient(base, environment.createAdmin());
    const webhook = await createWebhookThroughApi(api, { tools: [] }, { rateLimitPerMinute: 1000 });
    const path = new URL(webhook.url).pathname;
    const answers = new Map<number | string, number>();
    const acknowledged: string[] = [];
    let sequence = 0;
    let draining = false;
    const sender = async () => {
      for (;;) {
        const body = JSON.stringify({ eventType: 'order.created', externalId: `drain-${sequence++}` });
        try {
          const response = await fetch(`${base}${path}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              ...signingHeaders('wh', webhook.secret, body, { nowSeconds: Math.floor(Date.now() / 1000) }),
            },
            body,
          });
          answers.set(response.status, (answers.get(response.status) ?? 0) + 1);
          if (response.status === 200) acknowledged.push(((await response.json()) as { actionId: string }).actionId);
        } catch {
          // the server stopped accepting: the load stops too
          if (draining) return;
        }
      }
    };
    const senders = Array.from({ length: 16 }, sender);
    await eventually('100 acknowledged events', () => (acknowledged.length >= 100 ? true : undefined));
    draining = true;
    server.kill('SIGTERM');
    expect(await exitOf(server)).toBe(0);
    await Promise.all(senders);
    // Answered while draining: 200 (read before the stop) or 503 not_ready (a kept-alive connection afterwards); never a 500.
    expect([...answers.keys()].filter((status) => status !== 200 && status !== 503)).toEqual([]);
    const db = new pg.Client({ connectionString: environment.env.DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>('select count(*)::int as n from actions where id = any($1::uuid[])', [
        acknowledged,
      ]);
      expect(rows[0]!.n).toBe(acknowledged.length);
    } finally {
      await db.end();
    }
  });

  it('a worker hands its running action over at once: the model call is abandoned, another worker finishes it', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    await startServerProcess({ ...environment.env, RUN_WORKERS: 'false' }, port);
    const first = startWorker(environment.env);
    const api = await apiClient(base, { email: 'ops@acme.example', password: 'a long password' });
    const webhook = await createWebhookThroughApi(api, {
      tools: ['generateDocument'],
      approvalRules: { generateDocument: 'allow' },
    });
    // This action's first model call never answers in time; every later one (and the other tests' actions) at once.
    let calls = 0;
    model.script((request) => {
      if (!request.messages.some((message) => message.role === 'user' && message.content?.includes('handover')))
        return { text: 'ok' };
      calls++;
      if (toolResults(request).length > 0) return { text: 'filed' };
      return calls === 1
        ? { text: 'never delivered', delayMs: 120_000 }
        : { toolCalls: [{ name: 'generateDocument', arguments: { title: 'Report', content: 'body' } }] };
    });
    const actionId = await postSignedEvent(base, webhook, {
      eventType: 'report.due',
      externalId: 'handover',
      data: { label: 'handover' },
    });
    await eventually('the first worker to be waiting for the model', () => (calls >= 1 ? true : undefined));
    startWorker(environment.env); // the worker that takes the action over
    first.child.kill('SIGTERM');
    expect(await exitOf(first.child), first.output()).toBe(0);
    expect(first.output()).toContain('handed over to another worker');
    const done = await eventually('the action to be completed by the second worker', async () => {
      const action = await api('GET', `/orgs/acme/ledger/${actionId}`);
      return action.status === 'completed' ? action : undefined;
    });
    expect(done.status).toBe('completed');
  });
});
