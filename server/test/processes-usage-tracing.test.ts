import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackReceiver } from './helpers/callback-receiver.ts';
import { eventually } from './helpers/eventually.ts';
import { startFakeModel } from './helpers/fake-model.ts';
import { freePort } from './helpers/http.ts';
import { startOtlpReceiver } from './helpers/otlp-receiver.ts';
import {
  apiClient,
  createWebhookThroughApi,
  killServerProcess,
  serverProcessEnvironment,
  startServerProcess,
} from './helpers/server-process.ts';
import { signingHeaders } from '../src/features/ingest/verification.ts';

/**
 * Budgets and traces across real processes on one PostgreSQL: a `serve` process that takes the
 * events, and two `worker` processes that run them and send their callbacks.
 */
const CLI = join(import.meta.dirname, '../src/cli.ts');
const onPostgres = process.env.TEST_DB === 'postgres';

let model: Awaited<ReturnType<typeof startFakeModel>>;
let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
const children: ChildProcess[] = [];
let base = '';
let api: Awaited<ReturnType<typeof apiClient>>;

beforeAll(async () => {
  if (!onPostgres) return;
  model = await startFakeModel();
  otlp = await startOtlpReceiver();
  receiver = await startCallbackReceiver();
  environment = await serverProcessEnvironment({
    ...model.env,
    WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '1000000',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    ACTION_CONCURRENCY: '5',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  children.push(await startServerProcess({ ...environment.env, RUN_WORKERS: 'false', OTEL_SERVICE_NAME: 'ap-serve' }, port));
  for (const name of ['ap-worker-1', 'ap-worker-2'])
    children.push(
      spawn(process.execPath, [CLI, 'worker'], { env: { ...environment.env, OTEL_SERVICE_NAME: name }, stdio: 'ignore' }),
    );
  api = await apiClient(base, environment.createAdmin());
}, 120_000);
afterAll(async () => {
  for (const child of children) await killServerProcess(child);
  await environment?.cleanup();
  await Promise.all([model?.close(), otlp?.close(), receiver?.close()]);
});

async function post(
  webhook: { url: string; secret: string },
  payload: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const body = JSON.stringify(payload);
  const response = await fetch(`${base}${new URL(webhook.url).pathname}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signingHeaders('wh', webhook.secret, body, { nowSeconds: Math.floor(Date.now() / 1000) }),
      ...headers,
    },
    body,
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { actionId: string }).actionId;
}
const finalRow = (actionId: string) =>
  eventually(
    `action ${actionId} final`,
    async () => {
      const row = await api('GET', `/orgs/acme/ledger/${actionId}`);
      return ['completed', 'failed'].includes(row.status) ? row : undefined;
    },
    60_000,
  );

describe.runIf(onPostgres)('across processes', { timeout: 120_000 }, () => {
  it("one trace from the serve process's webhook request to the workers' callback attempts", async () => {
    model.script(() => ({ text: 'done' }));
    const webhook = await createWebhookThroughApi(api, { tools: [] });
    await api('POST', `/orgs/acme/webhooks/${webhook.webhook.id}/callbacks`, { url: receiver.url('/processes') });
    const traceId = randomBytes(16).toString('hex');
    const actionId = await post(
      webhook,
      { eventType: 'traced' },
      { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    );
    expect((await finalRow(actionId)).status).toBe('completed');
    const spans = await eventually('the trace from every process', () => {
      const trace = otlp.spans.filter((span) => span.traceId === traceId);
      return trace.some((span) => span.name === 'callback action.completed') ? trace : undefined;
    });
    const ingest = spans.find((span) => span.kind === 2)!;
    expect(ingest.service).toBe('ap-serve');
    const run = spans.find((span) => span.name === 'action.run')!;
    expect(run.service).toMatch(/^ap-worker-[12]$/);
    expect(run.parentSpanId).toBe(ingest.spanId);
    const callback = spans.find((span) => span.name === 'callback action.completed')!;
    expect(callback).toMatchObject({ parentSpanId: ingest.spanId, attributes: { 'http.response.status_code': 200 } });
    expect(callback.service).toMatch(/^ap-worker-[12]$/);
  });

  it('20 concurrent actions on two workers overspend the org budget by at most one call per concurrent run', async () => {
    // Calls slow enough that runs of both workers overlap (the bound is about concurrent admission).
    model.script(() => ({ text: 'ok', usage: { prompt: 100, completion: 50 }, delayMs: 200 }));
    model.concurrency.max = 0;
    const webhook = await createWebhookThroughApi(api, { tools: [] });
    const budget = 600;
    // The budget counts what the org spent earlier in the period too (the first test's call).
    const before = (await api('GET', '/orgs/acme/usage')).totals.totalTokens as number;
    await api('PUT', '/orgs/acme/budget', { budget: { period: 'day', maxTokens: budget, onExceed: 'fail' } });
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, index) => post(webhook, { eventType: 'spend', externalId: `spend-${index}` })),
    );
    const rows = await Promise.all(ids.map(finalRow));
    const failed = rows.filter((row) => row.status === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    for (const row of failed) expect(row.execution.error).toMatch(/^budget exceeded: the organization/);
    const spent = before + rows.reduce((total, row) => total + row.execution.usage.totalTokens, 0);
    // The runs did overlap (else the bound says nothing of concurrent admission), at most 5 at once in
    // each of the two workers: at most 10 calls (150 tokens each) admitted before the others' spend was known.
    expect(model.concurrency.max).toBeGreaterThan(1);
    expect(model.concurrency.max).toBeLessThanOrEqual(10);
    expect(spent).toBeGreaterThanOrEqual(budget);
    expect(spent).toBeLessThanOrEqual(budget + 10 * 150);
    expect((await api('GET', '/orgs/acme/budgets')).org.spentTokens).toBe(spent);
    await api('PUT', '/orgs/acme/budget', { budget: null });
  });
});
