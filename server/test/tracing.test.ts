import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from './helpers/actions.ts';
import { startCallbackReceiver } from './helpers/callback-receiver.ts';
import { addCallback, approveStaged, auth } from './helpers/callbacks.ts';
import { eventually } from './helpers/eventually.ts';
import { documentThenText, startFakeModel } from './helpers/fake-model.ts';
import { startOtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.ts';
import { POLL_FOR_DUE_WORK, startTestApp, type TestApp } from './helpers/test-app.ts';
import { postEvent, setupWebhook } from './helpers/webhooks.ts';
import { type FakeMailProvider, setUpEmailOrg } from './helpers/email.ts';
import { startFakeMailProvider } from './helpers/fake-mail-provider.ts';
import { freePort, startLoopbackServer } from './helpers/http.ts';
import { captureLog } from './helpers/log-capture.ts';

/**
 * OpenTelemetry: one trace per action, from the webhook request (continuing the sender's
 * traceparent) through the queue, the runs, the model and tool calls, the approval, to the last
 * callback, across a process that serves and one that works (two apps on one database), exported
 * over OTLP/HTTP to a loopback collector; no secret in any attribute.
 */
let model: Awaited<ReturnType<typeof startFakeModel>>;
let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
let provider: FakeMailProvider;
let serve: TestApp;
let worker: TestApp;
/** What every traced app here is started with: the loopback model, mail provider and collector. */
let env: Record<string, string>;
beforeAll(async () => {
  model = await startFakeModel();
  otlp = await startOtlpReceiver();
  receiver = await startCallbackReceiver();
  provider = await startFakeMailProvider();
  env = {
    ...model.env,
    MAIL_API_URL: provider.url,
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_BSP_SCHEDULE_DELAY: '50',
    ...POLL_FOR_DUE_WORK, // on PGlite, the worker container hears no signal of the serve's
  };
  serve = await startTestApp({ ...env, OTEL_SERVICE_NAME: 'ap-serve' }, { workers: false });
  worker = await startTestApp({ ...env, OTEL_SERVICE_NAME: 'ap-worker' }, { shareDatabaseWith: serve });
});
afterAll(async () => {
  await worker?.close();
  await serve?.close();
  await Promise.all([model?.close(), otlp?.close(), receiver?.close(), provider?.close()]);
});

const named = (spans: ReceivedSpan[], name: string) => spans.filter((span) => span.name === name);

describe('traces', () => {
  it('follow an action from its webhook request to its last callback, across the serve and the worker process', async () => {
    const setup = await setupWebhook(serve, {}, { approvalRules: { generateDocument: 'ask' } });
    const endpoint = await addCallback(serve, setup, { url: receiver.url('/traced') });
    model.script(documentThenText({ title: 'Secretive', content: 'confidential-body-7731' }));
    const traceId = randomBytes(16).toString('hex');
    const senderSpanId = randomBytes(8).toString('hex');
    const response = await postEvent(
      serve,
      setup,
      {
        eventType: 'order.created',
        externalId: 'trace-1',
        instructions: 'private-instructions-5150',
        data: { card: 'customer-secret-4242' },
      },
      { headers: { traceparent: `00-${traceId}-${senderSpanId}-01` } },
    );
    expect(response.status).toBe(200);
    const { actionId } = await response.json();
    await waitForAction(serve, auth(setup), actionId, ['pending_approval']);
    await approveStaged(serve, setup, actionId);
    await waitForAction(serve, auth(setup), actionId, ['completed']);
    await eventually('the completed callback', () =>
      receiver.forAction(actionId).find((callback) => callback.event.type === 'action.completed'),
    );

    const spans = await eventually('the trace, exported', () => {
      const trace = otlp.spans.filter((span) => span.traceId === traceId);
      return named(trace, 'callback action.completed').length > 0 && named(trace, 'chat scripted-model').length === 2
        ? trace
        : undefined;
    });
    // One trace: the sender's, continued by the ingest request.
    const [ingest] = named(spans, 'POST /webhooks/actions/:org/:webhookIdentifier');
    expect(ingest).toMatchObject({
      service: 'ap-serve',
      kind: 2,
      parentSpanId: senderSpanId,
      attributes: {
        'http.route': '/webhooks/actions/:org/:webhookIdentifier',
        'http.response.status_code': 200,
        'agent_platform.action.id': actionId,
      },
    });
    // Everything else ran in the worker, under the ingest request.
    const rest = spans.filter((span) => span !== ingest);
    expect(new Set(rest.map((span) => span.service))).toEqual(new Set(['ap-worker']));
    const runs = named(spans, 'action.run');
    expect(runs).toHaveLength(2); // until the approval, and after it
    for (const span of [...runs, ...named(spans, 'approval.wait generateDocument')])
      expect(span.parentSpanId).toBe(ingest!.spanId);
    for (const run of runs)
      expect(run.attributes).toMatchObject({
        'agent_platform.action.id': actionId,
        'agent_platform.agent.id': setup.agentId,
        'gen_ai.agent.name': 'Helper',
        'agent_platform.event.type': 'order.created',
      });
    // The first run carries the wait in the queue, from the action's creation to the run's start.
    const queueWait = runs[0]!.attributes['agent_platform.action.queue_wait_ms'];
    expect(queueWait).toBeTypeOf('number');
    expect(queueWait).toBeGreaterThanOrEqual(0);
    // (stored times are to the millisecond)
    expect(queueWait).toBeLessThanOrEqual(Number(runs[0]!.startNs - ingest!.startNs) / 1e6 + 1);
    expect(runs[1]!.attributes).not.toHaveProperty('agent_platform.action.queue_wait_ms');

    const chats = named(spans, 'chat scripted-model');
    for (const chat of chats) {
      expect(runs.map((run) => run.spanId)).toContain(chat.parentSpanId);
      expect(chat).toMatchObject({
        kind: 3,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai-compatible',
          'gen_ai.request.model': 'scripted-model',
          'gen_ai.usage.input_tokens': 10,
          'gen_ai.usage.output_tokens': 5,
        },
      });
    }
    const [tool] = named(spans, 'execute_tool generateDocument');
    expect(tool).toMatchObject({
      parentSpanId: runs[1]!.spanId,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'generateDocument',
        'agent_platform.tool.mode': 'ask',
        'agent_platform.tool.approval': 'approved',
        'agent_platform.tool.status': 'completed',
      },
    });
    const [wait] = named(spans, 'approval.wait generateDocument');
    expect(wait!.attributes).toMatchObject({
      'agent_platform.approval.channel': 'api',
      'agent_platform.approval.decision': 'approved',
    });
    expect(wait!.endNs).toBeGreaterThan(wait!.startNs);

    // Each callback attempt, under the ingest request, and the receiver was given the trace to continue.
    const callbackSpans = spans.filter((span) => span.name.startsWith('callback '));
    expect(callbackSpans.map((span) => span.name).sort()).toEqual(
      ['callback action.approved', 'callback action.completed', 'callback action.pending_approval'].sort(),
    );
    for (const span of callbackSpans) {
      expect(span).toMatchObject({
        kind: 3,
        parentSpanId: ingest!.spanId,
        attributes: { 'http.response.status_code': 200, 'server.address': '127.0.0.1' },
      });
    }
    for (const callback of receiver.forAction(actionId)) expect(String(callback.headers.traceparent)).toContain(traceId);

    // No secret, prompt, argument or payload in any attribute.
    const everything = JSON.stringify(otlp.spans.map((span) => [span.attributes, span.events]));
    for (const secret of [
      setup.secret,
      endpoint.secret,
      setup.tenant.token,
      model.apiKey,
      'customer-secret-4242',
      'private-instructions-5150',
      'confidential-body-7731',
      'Help.', // the agent's instructions
    ])
      expect(everything).not.toContain(secret);
    expect(everything).not.toContain('/traced'); // a callback URL's path may be a secret
  });

  it("starts a trace of its own without a traceparent; the action's spans join it", async () => {
    const setup = await setupWebhook(serve);
    model.script(() => ({ text: 'done' }));
    const response = await postEvent(serve, setup, { eventType: 'order.created' });
    const { actionId } = await response.json();
    await waitForAction(serve, auth(setup), actionId, ['completed']);
    const spans = await eventually('the run exported', () => {
      const ingest = otlp.spans.find((span) => span.attributes['agent_platform.action.id'] === actionId && span.kind === 2);
      const run = otlp.spans.find(
        (span) => span.name === 'action.run' && span.attributes['agent_platform.action.id'] === actionId,
      );
      return ingest && run ? { ingest, run } : undefined;
    });
    expect(spans.ingest.parentSpanId).toBe('');
    expect(spans.run.traceId).toBe(spans.ingest.traceId);
    expect(spans.run.parentSpanId).toBe(spans.ingest.spanId);
  });

  it("a sender's trace that is not sampled records no span in either process, and its callbacks carry it on", async () => {
    const setup = await setupWebhook(serve);
    await addCallback(serve, setup, { url: receiver.url('/unsampled') });
    model.script(() => ({ text: 'done' }));
    const traceId = randomBytes(16).toString('hex');
    const response = await postEvent(
      serve,
      setup,
      { eventType: 'order.created', externalId: 'unsampled-1' },
      { headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-00` } },
    );
    const { actionId } = await response.json();
    await waitForAction(serve, auth(setup), actionId, ['completed']);
    const completed = await eventually('the completed callback', () =>
      receiver.forAction(actionId).find((callback) => callback.event.type === 'action.completed'),
    );
    // The trace goes on, unsampled: the receiver may continue it as the sender decided.
    expect(String(completed.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));

    // A sampled action after it: once its spans are exported, the first action's would have been.
    const next = await postEvent(serve, setup, { eventType: 'order.created', externalId: 'sampled-2' });
    const nextId = (await next.json()).actionId;
    await waitForAction(serve, auth(setup), nextId, ['completed']);
    await eventually('the next action exported, to its last callback', () => {
      const run = otlp.spans.find((span) => span.name === 'action.run' && span.attributes['agent_platform.action.id'] === nextId);
      return otlp.spans.find((span) => span.name === 'callback action.completed' && span.traceId === run?.traceId);
    });
    expect(otlp.spans.filter((span) => span.traceId === traceId)).toEqual([]);
  });

  it("an experiment's replay is a trace of its own, naming the action, the agent and the version replayed", async () => {
    model.script(() => ({ text: 'Done.' }));
    const setup = await setupWebhook(serve);
    const { actionId } = await (await postEvent(serve, setup, { eventType: 'order.created' })).json();
    await waitForAction(serve, auth(setup), actionId, ['completed']);
    const agents = `/orgs/${setup.tenant.org.slug}/agents/${setup.agentId}`;
    const { token } = setup.tenant;
    const draft = await serve.request('POST', `${agents}/versions`, { token, body: { instructions: 'Help more.' } });
    const { version } = (await draft.json()).version;
    expect((await serve.request('POST', `${agents}/experiments`, { token, body: { version, limit: 1 } })).status).toBe(202);

    const replay = await eventually('the replay traced', () =>
      otlp.spans.find((span) => span.name === 'experiment.replay' && span.attributes['agent_platform.action.id'] === actionId),
    );
    expect(replay).toMatchObject({
      service: 'ap-worker',
      parentSpanId: '',
      attributes: {
        'agent_platform.agent.id': setup.agentId,
        'gen_ai.agent.name': 'Helper',
        'agent_platform.agent.version': version,
      },
    });
    const [chat] = await eventually('its model call', () => {
      const chats = otlp.spans.filter((span) => span.name === 'chat scripted-model' && span.parentSpanId === replay.spanId);
      return chats.length > 0 ? chats : undefined;
    });
    expect(chat!.traceId).toBe(replay.traceId);
  });

  it("an email's action starts its trace at the provider's notification", async () => {
    model.script(() => ({ text: 'Noted.' }));
    const org = await setUpEmailOrg(serve, provider);
    const received = provider.receive({
      from: 'Bob <bob@customer.test>',
      to: [org.inbox.emailAddress],
      subject: 'Traced',
      text: 'hello',
      headers: { 'Message-ID': '<bob-trace@customer.test>' },
    });
    expect((await org.notify(provider.receivedEvent(received.id))).status).toBe(200);
    const { notification, run } = await eventually('the email action traced', () => {
      const notification = otlp.spans.find((span) => span.name === 'POST /webhooks/mail');
      const run = otlp.spans.find(
        (span) => span.name === 'action.run' && span.attributes['agent_platform.action.source'] === 'email',
      );
      return notification && run ? { notification, run } : undefined;
    });
    expect(notification).toMatchObject({ service: 'ap-serve', kind: 2, parentSpanId: '' });
    expect(run).toMatchObject({ service: 'ap-worker', traceId: notification.traceId, parentSpanId: notification.spanId });
  });
});

describe('OTEL_RECORD_CONTENT=true', () => {
  it("puts the prompts, the answers, and the tools' arguments and results on the recorded spans", async () => {
    const app = await startTestApp({ ...env, OTEL_RECORD_CONTENT: 'true' }); // a database of its own, its own runners
    try {
      const setup = await setupWebhook(app);
      model.script(documentThenText({ title: 'Recorded', content: 'recorded-body-2718' }));
      // First an action whose sender did not sample its trace: its content goes nowhere.
      const unsampledTrace = randomBytes(16).toString('hex');
      const unsampled = await postEvent(
        app,
        setup,
        { eventType: 'order.created', externalId: 'unsampled-content', data: { note: 'unsampled-data-3141' } },
        { headers: { traceparent: `00-${unsampledTrace}-${randomBytes(8).toString('hex')}-00` } },
      );
      await waitForAction(app, auth(setup), (await unsampled.json()).actionId, ['completed']);
      const response = await postEvent(app, setup, {
        eventType: 'order.created',
        instructions: 'recorded-instructions-1414',
        data: { note: 'recorded-data-1618' },
      });
      const { actionId } = await response.json();
      await waitForAction(app, auth(setup), actionId, ['completed']);
      const spans = await eventually('the run, exported with its model and tool calls', () => {
        const run = otlp.spans.find(
          (span) => span.name === 'action.run' && span.attributes['agent_platform.action.id'] === actionId,
        );
        const trace = otlp.spans.filter((span) => span.traceId === run?.traceId);
        return named(trace, 'chat scripted-model').length === 2 && named(trace, 'execute_tool generateDocument').length === 1
          ? trace
          : undefined;
      });
      const [first, second] = named(spans, 'chat scripted-model');
      expect(first!.attributes['gen_ai.system_instructions']).toBe('Help.'); // the agent's instructions
      expect(String(first!.attributes['gen_ai.input.messages'])).toContain('recorded-instructions-1414');
      expect(String(first!.attributes['gen_ai.input.messages'])).toContain('recorded-data-1618');
      expect(String(first!.attributes['gen_ai.output.messages'])).toContain('generateDocument');
      expect(String(second!.attributes['gen_ai.output.messages'])).toContain('Made ');
      const [tool] = named(spans, 'execute_tool generateDocument');
      expect(String(tool!.attributes['gen_ai.tool.call.arguments'])).toContain('recorded-body-2718');
      expect(tool!.attributes['gen_ai.tool.call.result']).toEqual(expect.any(String));
      // Exported after the unsampled action's spans would have been: none were, nor its content.
      expect(otlp.spans.filter((span) => span.traceId === unsampledTrace)).toEqual([]);
      expect(JSON.stringify(otlp.spans.map((span) => span.attributes))).not.toContain('unsampled-data-3141');
    } finally {
      await app.close();
    }
  });
});

describe('a sampler the service does not have', () => {
  it('is a warning in the log of every kind of process, and traces are sampled by the default', async () => {
    const log = captureLog({ level: 'warn' });
    const app = await startTestApp(
      { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'jaeger_remote' },
      { logger: log.logger, shareDatabaseWith: serve },
    );
    try {
      expect(app.container.config.tracing.sampler).toEqual({ name: 'parentbased_always_on', ratio: 1 });
      expect(log.text()).toMatch(/OTEL_TRACES_SAMPLER=jaeger_remote is not one of/);
    } finally {
      await app.close();
    }
  });
});

describe('an OTLP endpoint that is down or does not answer', () => {
  it('costs spans, counted in /metrics, never an action', async () => {
    const hanging = await startLoopbackServer(() => new Promise(() => {})); // takes the request, never answers
    const closed = `http://127.0.0.1:${await freePort()}`;
    const apps = await Promise.all(
      [hanging.url, closed].map((endpoint) =>
        startTestApp({
          ...model.env,
          OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
          OTEL_BSP_SCHEDULE_DELAY: '20',
          OTEL_BSP_MAX_QUEUE_SIZE: '4',
          OTEL_BSP_EXPORT_TIMEOUT: '300',
        }),
      ),
    );
    try {
      model.script(() => ({ text: 'done' }));
      for (const app of apps) {
        const setup = await setupWebhook(app);
        const ids = await Promise.all(
          Array.from(
            { length: 6 },
            async () => (await (await postEvent(app, setup, { eventType: 'order.created' })).json()).actionId as string,
          ),
        );
        for (const id of ids)
          expect((await waitForAction(app, auth(setup), id, ['completed', 'failed'])).status).toBe('completed');
      }
      const dropped = async (app: TestApp, reason: string) => {
        const text = await (await app.request('GET', '/metrics')).text();
        return Number(new RegExp(`otel_spans_dropped_total\\{reason="${reason}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
      };
      await eventually('spans dropped for a full queue', async () =>
        (await dropped(apps[0]!, 'queue_full')) > 0 ? true : undefined,
      );
      await eventually('spans dropped for a failed export', async () =>
        (await dropped(apps[1]!, 'export_failed')) > 0 ? true : undefined,
      );
    } finally {
      await Promise.all(apps.map((app) => app.close()));
      await hanging.close();
    }
  });
});
