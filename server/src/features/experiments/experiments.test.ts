import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { startCallbackReceiver } from '../../../test/helpers/callback-receiver.ts';
import { addCallback, approveStaged, auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createTenant } from '../../../test/helpers/factories.ts';
import { type ChatRequest, calledTools, eventData, toolResults } from '../../../test/helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let orders: TestMcpServer;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
beforeAll(async () => {
  orders = await startTestMcpServer();
  receiver = await startCallbackReceiver();
});
afterAll(async () => {
  await orders?.close();
  await receiver?.close();
});
useAppWithModel(
  { MCP_ALLOW_PRIVATE_NETWORKS: 'true', CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', EXPERIMENT_CONCURRENCY: '4' },
  (started) => {
    ({ app, model } = started);
  },
);

const systemOf = (request: ChatRequest) => request.messages.find((message) => message.role === 'system')?.content ?? '';

/**
 * A model that does what the agent's instructions say: it looks the order up, then refunds the
 * event's amount ("Refund at most N." caps it), then reports what the refund tool answered.
 */
function followInstructions(request: ChatRequest) {
  const { order_id: orderId, amount } = eventData(request);
  const cap = Number(/Refund at most (\d+)\./.exec(systemOf(request))?.[1] ?? Number.POSITIVE_INFINITY);
  const results = toolResults(request);
  if (!calledTools(request)) return { toolCalls: [{ name: 'orders__lookup_order', arguments: { orderId } }] };
  if (results.length === 1)
    return { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId, amount: Math.min(amount, cap) } }] };
  return { text: `Done: ${JSON.stringify(results.at(-1)!.content)}` };
}

/** A tenant whose agent (version 2) refunds through the order system; refunds over 150 go to a person. */
async function setup(): Promise<WebhookSetup> {
  const made = await setupWebhook(
    app,
    {},
    {
      approvalRules: { orders__refund_order: 'allow', orders__lookup_order: 'allow' },
      argumentRules: [{ tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 150, mode: 'ask' }],
    },
  );
  const { org, token } = made.tenant;
  const server = await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: orders.url } });
  expect(server.status).toBe(201);
  const agent = await app.request('PATCH', `/orgs/${org.slug}/agents/${made.agentId}`, {
    token,
    body: { instructions: 'Refund what the customer asks.', tools: ['orders__lookup_order', 'orders__refund_order'] },
  });
  expect(agent.status).toBe(200);
  return made;
}

function api(made: WebhookSetup) {
  const { org, token } = made.tenant;
  return {
    get: async (path: string) => app.request('GET', `/orgs/${org.slug}${path}`, { token }),
    post: async (path: string, body?: unknown) => app.request('POST', `/orgs/${org.slug}${path}`, { token, body }),
  };
}

/** Runs `count` actions to completion (approving the refunds that wait); returns their ids, newest first. */
async function recordActions(made: WebhookSetup, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 1; index <= count; index++) {
    const id = await runEvent(app, made, { data: { order_id: `O-${index}`, amount: index * 10 } });
    const row = await waitForAction(app, auth(made), id, ['completed', 'pending_approval', 'failed']);
    if (row.status === 'pending_approval') {
      await approveStaged(app, made, id);
      await waitForAction(app, auth(made), id, ['completed', 'failed']);
    }
    ids.unshift(id);
  }
  return ids;
}

async function finished(made: WebhookSetup, experimentId: string, query = '?limit=200') {
  return eventually(`experiment ${experimentId} to finish`, async () => {
    const body = await (await api(made).get(`/experiments/${experimentId}${query}`)).json();
    return ['completed', 'failed', 'cancelled'].includes(body.experiment.state) ? body : undefined;
  });
}

describe('experiments', () => {
  it('replays 20 past actions with a candidate version: exactly the changed ones, with their argument differences; no side effect', async () => {
    const made = await setup();
    await addCallback(app, made, { url: receiver.url(`/experiments-${made.agentId}`) });
    model.script(followInstructions);
    const recorded = await recordActions(made, 20);
    const draft = await (
      await api(made).post(`/agents/${made.agentId}/versions`, { instructions: 'Refund at most 100.', changeNote: 'cap' })
    ).json();
    expect(draft.version.version).toBe(3);

    const effects = orders.sideEffects.length;
    const callbacks = receiver.received.length;
    const ledger = async () => (await (await api(made).get('/ledger?limit=200')).json()).rows.length;
    const rows = await ledger();
    const requests = model.requests.length;

    const started = await api(made).post(`/agents/${made.agentId}/experiments`, { version: 3, limit: 20 });
    expect(started.status).toBe(202);
    const { experiment } = await started.json();
    expect(experiment).toMatchObject({ version: 3, state: expect.stringMatching(/^(queued|running)$/), progress: { total: 20 } });
    const done = await finished(made, experiment.id);
    expect(done.experiment).toMatchObject({
      state: 'completed',
      progress: { total: 20, done: 20 },
      outcomes: { same: 10, changed: 10, failed: 0 },
    });

    // Amounts 10..200: those over 100 are refunded at 100 now; the ones over 150 no longer wait for a person.
    const amountOf = (actionId: string) => (20 - recorded.indexOf(actionId)) * 10;
    const changed = done.results.filter((result: any) => result.outcome === 'changed');
    expect(changed.map((result: any) => amountOf(result.actionId)).sort((a: number, b: number) => a - b)).toEqual([
      110, 120, 130, 140, 150, 160, 170, 180, 190, 200,
    ]);
    expect(done.results.filter((result: any) => result.outcome === 'same')).toHaveLength(10);
    const big = done.results.find((result: any) => amountOf(result.actionId) === 180);
    expect(big.differences).toEqual([
      { kind: 'arguments_changed', toolName: 'orders__refund_order', changes: [{ path: '/amount', from: 180, to: 100 }] },
      {
        kind: 'approval_no_longer_needed',
        toolName: 'orders__refund_order',
        reason: 'argument rule 1: /amount gt 150',
      },
      { kind: 'final_text_changed', from: 'Done: "Refunded 180 on order O-18"', to: expect.stringContaining('Not executed') },
    ]);
    // In the order a person reads them, not jsonb's (`to`, `from`, `path`).
    expect(big.differences.map((difference: object) => Object.keys(difference))).toEqual([
      ['kind', 'toolName', 'changes'],
      ['kind', 'toolName', 'reason'],
      ['kind', 'from', 'to'],
    ]);
    expect(Object.keys(big.differences[0].changes[0])).toEqual(['path', 'from', 'to']);
    expect(big.baseline).toMatchObject({ status: 'completed', approvalsNeeded: 1, steps: 3 });
    expect(big.candidate.toolCalls).toEqual([
      expect.objectContaining({ toolName: 'orders__lookup_order', replayed: 'recorded', approval: null }),
      expect.objectContaining({
        toolName: 'orders__refund_order',
        arguments: { orderId: 'O-18', amount: 100 },
        replayed: 'not_executed',
      }),
    ]);
    expect(done.summary).toMatchObject({
      outcomes: { same: 10, changed: 10, failed: 0 },
      baseline: { approvalsNeeded: 5, inputTokens: 20 * 3 * 10 },
      candidate: { approvalsNeeded: 0, inputTokens: 20 * 3 * 10 },
    });
    const onlyChanged = await (await api(made).get(`/experiments/${experiment.id}?outcome=changed&limit=4`)).json();
    expect(onlyChanged.results).toHaveLength(4);
    const rest = await (
      await api(made).get(`/experiments/${experiment.id}?outcome=changed&limit=10&cursor=${onlyChanged.nextCursor}`)
    ).json();
    expect([...onlyChanged.results, ...rest.results].map((result: any) => result.actionId)).toEqual(
      changed.map((result: any) => result.actionId),
    );

    // The model was called for real, 3 steps per action; nothing else happened anywhere.
    expect(model.requests.length - requests).toBe(60);
    expect(orders.sideEffects.length).toBe(effects);
    expect(await ledger()).toBe(rows);
    // Callbacks of the recorded actions may still be arriving: none is of an action the experiment made.
    expect(
      receiver.received.slice(callbacks).every((callback) => recorded.includes(JSON.parse(callback.body).data.actionId)),
    ).toBe(true);
    const usage = await (await api(made).get('/usage?groupBy=experiment&experiments=only')).json();
    expect(usage.totals.calls).toBe(60);
    expect(usage.groups).toEqual([
      expect.objectContaining({ key: experiment.id, label: 'experiment: Helper version 3', calls: 60 }),
    ]);
    const live = await (await api(made).get('/usage?experiments=exclude')).json();
    expect(live.totals.calls).toBe(60);

    // The live version replayed on the same actions: all the same.
    const same = await (await api(made).post(`/agents/${made.agentId}/experiments`, { version: 2, actionIds: recorded })).json();
    const sameDone = await finished(made, same.experiment.id);
    expect(sameDone.summary.outcomes).toEqual({ same: 20, changed: 0, failed: 0 });
    expect(orders.sideEffects.length).toBe(effects);
    const listed = await (await api(made).get(`/experiments?agentId=${made.agentId}`)).json();
    expect(listed.experiments.map((item: any) => [item.id, item.outcomes])).toEqual([
      [same.experiment.id, { same: 20, changed: 0, failed: 0 }],
      [experiment.id, { same: 10, changed: 10, failed: 0 }],
    ]);

    // Asked for, the read-only lookup runs for real (the refund still does not).
    const lookups = await (
      await api(made).post(`/agents/${made.agentId}/experiments`, {
        version: 3,
        actionIds: recorded.slice(0, 2),
        liveReadOnlyTools: true,
      })
    ).json();
    const lookupsDone = await finished(made, lookups.experiment.id);
    expect(lookupsDone.results.map((result: any) => result.candidate.toolCalls.map((call: any) => call.replayed))).toEqual([
      ['live', 'not_executed'],
      ['live', 'not_executed'],
    ]);
    const lookedUp = orders.sideEffects.slice(effects).map((effect) => [effect.tool, (effect.arguments as any).orderId]);
    expect(lookedUp.sort()).toEqual([
      ['lookup_order', 'O-19'],
      ['lookup_order', 'O-20'],
    ]);
  }, 120_000);

  it("keeps what an approver changed in the original run: the model's arguments are compared, the edited ones shown", async () => {
    const made = await setup();
    model.script(followInstructions);
    const id = await runEvent(app, made, { externalId: 'refund-O-E', data: { order_id: 'O-E', amount: 180 } });
    await waitForAction(app, auth(made), id, ['pending_approval']);
    const { approvals } = await (await api(made).get('/approvals')).json();
    const call = approvals.find((candidate: { actionId: string }) => candidate.actionId === id);
    const edited = { orderId: 'O-E', amount: 170 };
    const approved = await api(made).post(`/actions/${id}/tool-calls/${call.toolCallId}/approve`, { arguments: edited });
    expect(approved.status).toBe(200);
    await waitForAction(app, auth(made), id, ['completed']);

    const started = await (await api(made).post(`/agents/${made.agentId}/experiments`, { version: 2, actionIds: [id] })).json();
    const [result] = (await finished(made, started.experiment.id)).results;
    expect(result).toMatchObject({ actionId: id, eventType: 'order.created', externalId: 'refund-O-E' });
    expect(result.baseline.toolCalls[1]).toEqual({
      toolName: 'orders__refund_order',
      arguments: { orderId: 'O-E', amount: 180 },
      approvedArguments: edited,
      mode: 'ask',
      approval: 'argument rule 1: /amount gt 150',
      status: 'completed',
    });
    // The same version proposes what the model proposed then, and gets what the edited call answered.
    expect(result.outcome).toBe('same');
    expect(result.candidate.toolCalls[1]).toMatchObject({ arguments: { orderId: 'O-E', amount: 180 }, replayed: 'recorded' });
    expect(result.candidate.toolCalls[1].approvedArguments).toBeUndefined();
  });

  it('refuses bad input with a clear 4xx; another org sees nothing and starts nothing', async () => {
    const made = await setup();
    model.script(followInstructions);
    const [recorded] = await recordActions(made, 1);
    const other = await setup();
    const [foreign] = await recordActions(other, 1);
    const start = (body: unknown) => api(made).post(`/agents/${made.agentId}/experiments`, body);
    const cases: Array<[unknown, number, RegExp]> = [
      [{ version: 9 }, 400, /no version 9/],
      [{ version: 2, limit: 501 }, 400, /limit/],
      [{ version: 2, actionIds: [foreign] }, 400, new RegExp(`not finished actions of this agent: ${foreign}`)],
      [{ version: 2, filter: { from: 'yesterday' } }, 400, /filter\/from/],
      [{ version: 2, filter: { status: 'running' } }, 400, /filter\/status/],
      [{ version: 2, filter: { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' } }, 400, /from must be before to/],
      [{ version: 2, filter: { eventType: 'nothing.like.this' } }, 400, /no finished action of this agent matches/],
      [{ version: 2, surprise: true }, 400, /^body: Unrecognized key: "surprise"$/],
      [{}, 400, /version/],
    ];
    for (const [body, status, message] of cases) {
      const response = await start(body);
      const answer = await response.json();
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(answer.error, JSON.stringify(body)).toMatch(message);
    }
    const started = await (await start({ version: 2, actionIds: [recorded] })).json();
    await finished(made, started.experiment.id);

    // Another org: its admin cannot start one on this org's agent, nor see or cancel this org's experiment.
    const stranger = await createTenant(app);
    const asStranger = (method: 'GET' | 'POST', path: string, body?: unknown) =>
      app.request(method, `/orgs/${stranger.org.slug}${path}`, { token: stranger.token, body });
    expect((await asStranger('POST', `/agents/${made.agentId}/experiments`, { version: 2 })).status).toBe(404);
    expect((await asStranger('GET', `/experiments/${started.experiment.id}`)).status).toBe(404);
    expect((await asStranger('POST', `/experiments/${started.experiment.id}/cancel`)).status).toBe(404);
    expect((await (await asStranger('GET', '/experiments')).json()).experiments).toEqual([]);
    const intoThisOrg = await app.request('GET', `/orgs/${made.tenant.org.slug}/experiments`, { token: stranger.token });
    expect(intoThisOrg.status).toBe(404);
    // A finished experiment cannot be cancelled.
    const cancelled = await api(made).post(`/experiments/${started.experiment.id}/cancel`);
    expect(cancelled.status).toBe(409);
    expect((await api(made).get(`/experiments/${started.experiment.id}?cursor=bad`)).status).toBe(400);
  });

  it('cancel stops it: replays in flight stop and store nothing, none starts', async () => {
    const made = await setup();
    model.script(followInstructions);
    const recorded = await recordActions(made, 6);
    // The candidate's model answers slowly: the experiment is cancelled while its replays wait on it.
    model.script((request) =>
      systemOf(request).includes('Slowly.') ? { text: 'late', delayMs: 3000 } : followInstructions(request),
    );
    await api(made).post(`/agents/${made.agentId}/versions`, { instructions: 'Slowly.' });
    // Counted before the start: its replays may reach the model before the start's answer reaches here.
    const asked = model.requests.length;
    const { experiment } = await (
      await api(made).post(`/agents/${made.agentId}/experiments`, { version: 3, actionIds: recorded })
    ).json();
    await eventually('replays waiting on the model', () =>
      model.requests.slice(asked).some((request) => systemOf(request).includes('Slowly.')) ? true : undefined,
    );
    const cancelled = await api(made).post(`/experiments/${experiment.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect((await cancelled.json()).experiment).toMatchObject({ state: 'cancelled', progress: { done: 0 } });
    // Replays that were waiting on the model end without a result, and give their results up.
    await eventually('the replays in flight to stop', async () => {
      const rows = await app.container.db
        .selectFrom('experimentResults')
        .select('leaseExpiresAt')
        .where('experimentId', '=', experiment.id)
        .execute();
      return rows.every((row) => row.leaseExpiresAt === null) ? true : undefined;
    });
    const after = await (await api(made).get(`/experiments/${experiment.id}`)).json();
    expect(after).toMatchObject({ experiment: { state: 'cancelled', progress: { total: 6, done: 0 } }, results: [] });
  }, 60_000);

  it("counts each experiment's results per outcome, a replay the model refused as failed", async () => {
    const made = await setup();
    model.script((request) =>
      systemOf(request).includes('Refuse O-2.') && eventData(request).order_id === 'O-2'
        ? { error: { status: 400, message: 'The prompt was refused' } }
        : followInstructions(request),
    );
    const recorded = await recordActions(made, 3);
    const draft = await (
      await api(made).post(`/agents/${made.agentId}/versions`, { instructions: 'Refund what the customer asks. Refuse O-2.' })
    ).json();
    const { experiment } = await (
      await api(made).post(`/agents/${made.agentId}/experiments`, { version: draft.version.version, actionIds: recorded })
    ).json();
    const done = await finished(made, experiment.id);
    expect(done.experiment).toMatchObject({ state: 'completed', outcomes: { same: 2, changed: 0, failed: 1 } });
    expect(done.summary.outcomes).toEqual(done.experiment.outcomes);
    const failed = done.results.find((result: any) => result.outcome === 'failed');
    expect(failed.candidate.error).toMatch(/The prompt was refused/);
    const listed = await (await api(made).get(`/experiments?agentId=${made.agentId}`)).json();
    expect(listed.experiments).toEqual([
      expect.objectContaining({ id: experiment.id, outcomes: { same: 2, changed: 0, failed: 1 } }),
    ]);
  }, 60_000);

  it("counts against the agent's budget: an experiment that reaches it stops with the budget's reason", async () => {
    const made = await setup();
    model.script(followInstructions);
    const recorded = await recordActions(made, 4);
    // The 4 actions used 4 x 3 calls x 15 tokens today: room for about one more action's replay.
    const budget = await app.request('PATCH', `/orgs/${made.tenant.org.slug}/agents/${made.agentId}`, {
      token: made.tenant.token,
      body: { budget: { period: 'day', maxTokens: 4 * 45 + 45, onExceed: 'pause' } },
    });
    expect(await budget.json()).toMatchObject({ liveVersion: 2 }); // a budget makes no version
    const { experiment } = await (
      await api(made).post(`/agents/${made.agentId}/experiments`, { version: 2, actionIds: recorded })
    ).json();
    const done = await finished(made, experiment.id);
    expect(done.experiment).toMatchObject({
      state: 'failed',
      error: expect.stringMatching(/^Stopped by a budget: budget exceeded: /),
    });
    expect(done.experiment.progress.done).toBeLessThan(4);
    // Nothing waits for a person: no action was paused, none created.
    const pending = await (await api(made).get('/approvals')).json();
    expect(pending.approvals).toEqual([]);
  }, 60_000);
});
