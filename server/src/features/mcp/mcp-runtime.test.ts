import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { approveStaged, auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { calledTools, type ChatRequest, toolResults } from '../../../test/helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let orders: TestMcpServer;
beforeAll(async () => {
  orders = await startTestMcpServer();
});
afterAll(async () => orders?.close());
afterEach(() => orders.resetNextCalls(0));
useAppWithModel(
  { MCP_ALLOW_PRIVATE_NETWORKS: 'true', MCP_CALL_TIMEOUT_SECONDS: '1', MCP_MAX_RESULT_BYTES: '2000' },
  (started) => {
    ({ app, model } = started);
  },
);

/** A tenant whose agent has the order system's tools, with these modes (and argument rules). */
async function setup(
  approvalRules: Record<string, string>,
  url = orders.url,
  argumentRules: unknown[] = [],
): Promise<WebhookSetup> {
  const tools = Object.keys(approvalRules);
  const made = await setupWebhook(app, {}, { approvalRules, argumentRules });
  const { org, token } = made.tenant;
  const server = await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url } });
  expect(server.status).toBe(201);
  const agent = await app.request('PATCH', `/orgs/${org.slug}/agents/${made.agentId}`, { token, body: { tools } });
  expect(agent.status).toBe(200);
  return made;
}

/** The model calls `name` with `args` once, then answers with what it got back. */
const callThenReport = (name: string, args: unknown) => (request: ChatRequest) =>
  calledTools(request)
    ? { text: `Got ${JSON.stringify(toolResults(request).at(-1)!.content)}` }
    : { toolCalls: [{ name, arguments: args }] };

const effectsOf = (toolCallId: string) => orders.sideEffects.filter((effect) => effect.toolCallId === toolCallId);

describe('MCP tools in a run', () => {
  it('an allow call runs once, with the tool call id and its action id in _meta, and its result reaches the model and the ledger', async () => {
    const made = await setup({ orders__refund_order: 'allow' });
    model.script(callThenReport('orders__refund_order', { orderId: 'A-1', amount: 30 }));
    const actionId = await runEvent(app, made);
    const row = await waitForAction(app, auth(made), actionId, ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(row.execution.result.text).toBe('Got "Refunded 30 on order A-1"');
    const [call] = row.execution.toolCalls;
    expect(call).toMatchObject({
      toolName: 'orders__refund_order',
      mode: 'allow',
      status: 'completed',
      input: { orderId: 'A-1', amount: 30 },
    });
    expect(effectsOf(call.toolCallId)).toEqual([
      { tool: 'refund_order', arguments: { orderId: 'A-1', amount: 30 }, toolCallId: call.toolCallId, actionId },
    ]);
    // The model saw the server's description and schema, under the prefixed name.
    const offered = model.requests.at(-2)!.tools!.find((tool) => tool.function.name === 'orders__refund_order')!;
    expect(offered.function.description).toBe('Refund an order, in full or in part');
    expect(offered.function.parameters).toMatchObject({ type: 'object', required: ['orderId', 'amount'] });
  });

  it('an ask call waits for a human and runs only once approved', async () => {
    const made = await setup({ orders__refund_order: 'ask' });
    model.script(callThenReport('orders__refund_order', { orderId: 'B-2', amount: 500 }));
    const actionId = await runEvent(app, made);
    const waiting = await waitForAction(app, auth(made), actionId, ['pending_approval']);
    const [call] = waiting.execution.toolCalls;
    expect(call).toMatchObject({ mode: 'ask', status: 'staged', approval: 'pending' });
    expect(effectsOf(call.toolCallId)).toEqual([]);
    await approveStaged(app, made, actionId);
    const done = await waitForAction(app, auth(made), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(effectsOf(call.toolCallId)).toHaveLength(1);
  });

  it('agent mode fails closed: a call without an explicit no_approval_needed waits', async () => {
    const made = await setup({ orders__refund_order: 'agent' });
    model.script(callThenReport('orders__refund_order', { orderId: 'C-3', amount: 5 }));
    const actionId = await runEvent(app, made);
    const waiting = await waitForAction(app, auth(made), actionId, ['pending_approval', 'completed', 'failed']);
    expect(waiting.status).toBe('pending_approval');
    expect(effectsOf(waiting.execution.toolCalls[0].toolCallId)).toEqual([]);
    // The model was offered the decision field beside the server's own arguments.
    const offered = model.requests.at(-1)!.tools!.find((tool) => tool.function.name === 'orders__refund_order')!;
    expect(offered.function.parameters.required).toEqual(['orderId', 'amount', 'approvalDecision']);
  });

  it('a tool error, a timeout, a huge result, a removed tool and an unreachable server: each an error the model and the ledger show', async () => {
    const cases: Array<[string, unknown, RegExp | string]> = [
      ['orders__fail', {}, /the tool answered with an error: The order system is down for maintenance/],
      ['orders__slow', { ms: 3000 }, /did not answer within 1 s; it may or may not have done it/],
      ['orders__refund_order', { orderId: 'x' }, /Input validation error/],
    ];
    for (const [tool, args, expected] of cases) {
      const made = await setup({ [tool]: 'allow' });
      model.script(callThenReport(tool, args));
      const actionId = await runEvent(app, made);
      const row = await waitForAction(app, auth(made), actionId, ['completed', 'failed']);
      expect(row.status, tool).toBe('completed');
      const [call] = row.execution.toolCalls;
      expect(call.status, tool).toBe('failed');
      expect(JSON.stringify(call.output), tool).toMatch(expected);
      expect(row.execution.result.text, tool).toMatch(expected);
    }

    // Over MCP_MAX_RESULT_BYTES: cut, and the model told so.
    const big = await setup({ orders__huge: 'allow' });
    model.script(callThenReport('orders__huge', { bytes: 50_000 }));
    const bigRow = await waitForAction(app, auth(big), await runEvent(app, big), ['completed', 'failed']);
    expect(bigRow.execution.toolCalls[0]).toMatchObject({ status: 'completed', output: { value: { truncated: true } } });
    expect(bigRow.execution.toolCalls[0].output.value.note).toMatch(/over the limit of 2000/);
    expect(bigRow.execution.toolCalls[0].output.value.start.length).toBeLessThanOrEqual(2000);

    // A tool the server no longer has (removed since it was listed).
    const gone = await startTestMcpServer();
    try {
      const made = await setup({ orders__set_status: 'allow' }, gone.url);
      gone.removeTool('set_status');
      model.script(callThenReport('orders__set_status', { orderId: 'D-4', status: 'held' }));
      const row = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
      expect(row.execution.toolCalls[0].status).toBe('failed');
      expect(JSON.stringify(row.execution.toolCalls[0].output)).toMatch(/refused the call: .*set_status/);
    } finally {
      await gone.close();
    }

    // Its credentials stopped working (the token was rotated at the server).
    const rotated = await startTestMcpServer({ bearerToken: 'first-token' });
    try {
      const made = await setupWebhook(app, {}, { approvalRules: { orders__lookup_order: 'allow' } });
      const { org, token } = made.tenant;
      const server = await app.request('POST', `/orgs/${org.slug}/mcp-servers`, {
        token,
        body: { name: 'orders', url: rotated.url, headers: { Authorization: 'Bearer first-token' } },
      });
      expect(server.status).toBe(201);
      await app.request('PATCH', `/orgs/${org.slug}/agents/${made.agentId}`, {
        token,
        body: { tools: ['orders__lookup_order'] },
      });
      rotated.rotateBearerToken('second-token');
      model.script(callThenReport('orders__lookup_order', { orderId: 'R-1' }));
      const row = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
      expect(row.execution.toolCalls[0].status).toBe('failed');
      expect(JSON.stringify(row.execution.toolCalls[0].output)).toMatch(/refused the credentials/);
    } finally {
      await rotated.close();
    }

    // The server went away after it was connected.
    const down = await startTestMcpServer();
    const made = await setup({ orders__lookup_order: 'allow' }, down.url);
    await down.close();
    model.script(callThenReport('orders__lookup_order', { orderId: 'E-5' }));
    const row = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(JSON.stringify(row.execution.toolCalls[0].output)).toMatch(
      /the MCP server \\"orders\\" could not be reached: .*ECONNREFUSED/,
    );
  });

  it('argument rules: refunds over 100 wait for a human, over 1000 are refused with the rule named, smaller ones run', async () => {
    const rules = [
      { tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 100, mode: 'ask' },
      { tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 1000, mode: 'deny' },
    ];
    const made = await setup({ orders__refund_order: 'allow' }, orders.url, rules);
    const run = async (amount: number, states: string[]) => {
      model.script(callThenReport('orders__refund_order', { orderId: `G-${amount}`, amount }));
      return waitForAction(app, auth(made), await runEvent(app, made), states);
    };

    const small = await run(50, ['completed', 'failed']);
    expect(small.execution.toolCalls[0]).toMatchObject({ mode: 'allow', status: 'completed', modeSource: { source: 'rule' } });
    expect(effectsOf(small.execution.toolCalls[0].toolCallId)).toHaveLength(1);

    const large = await run(500, ['pending_approval']);
    expect(large.execution.toolCalls[0]).toMatchObject({
      mode: 'ask',
      status: 'staged',
      modeSource: { source: 'argument_rule', index: 0, rule: rules[0] },
    });
    expect(effectsOf(large.execution.toolCalls[0].toolCallId)).toEqual([]);
    // The approvals inbox lists it like any other call.
    const { approvals } = await (
      await app.request('GET', `/orgs/${made.tenant.org.slug}/approvals`, { token: made.tenant.token })
    ).json();
    expect(approvals).toEqual([
      expect.objectContaining({ actionId: large.id, toolName: 'orders__refund_order', input: { orderId: 'G-500', amount: 500 } }),
    ]);

    const huge = await run(5000, ['completed', 'failed']);
    expect(huge.execution.toolCalls[0]).toMatchObject({
      mode: 'deny',
      status: 'denied',
      modeSource: { source: 'argument_rule', index: 1 },
    });
    expect(huge.execution.toolCalls[0].output.reason).toMatch(
      /argument rule 2 \(orders__refund_order: \/amount gt 1000 -> deny\)/,
    );
    expect(huge.execution.result.text).toMatch(/argument rule 2/);
    expect(effectsOf(huge.execution.toolCalls[0].toolCallId)).toEqual([]);
  });

  it('argument rules apply to built-in tools too', async () => {
    const made = await setupWebhook(
      app,
      {},
      {
        approvalRules: { generateDocument: 'allow' },
        argumentRules: [{ tool: 'generateDocument', path: '/title', op: 'matches', value: '(?i)confidential', mode: 'deny' }],
      },
    );
    model.script(callThenReport('generateDocument', { title: 'Confidential plan', content: '# x' }));
    const row = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
    expect(row.execution.toolCalls[0]).toMatchObject({ status: 'denied', modeSource: { source: 'argument_rule', index: 0 } });
  });

  it('refuses bad argument rules when a rule is saved', async () => {
    const made = await setupWebhook(app);
    const { org, token } = made.tenant;
    for (const argumentRules of [
      [{ tool: 'x', path: '/a', op: 'matches', value: '(a+)+$', mode: 'ask' }],
      [{ tool: 'x', path: 'a', op: 'eq', value: 1, mode: 'ask' }],
      [{ tool: 'x', path: '/a', op: 'gt', value: {}, mode: 'deny' }],
      Array.from({ length: 51 }, () => ({ tool: 'x', path: '/a', op: 'exists', mode: 'ask' })),
    ]) {
      const response = await app.request('PATCH', `/orgs/${org.slug}/action-rules/${made.ruleId}`, {
        token,
        body: { argumentRules },
      });
      expect(response.status).toBe(400);
      expect((await response.json()).code).toBe('validation_failed');
    }
    const saved = await app.request('PATCH', `/orgs/${org.slug}/action-rules/${made.ruleId}`, {
      token,
      body: { argumentRules: [{ tool: 'generateDocument', path: '/title', op: 'exists', mode: 'ask' }] },
    });
    expect((await saved.json()).argumentRules).toEqual([{ tool: 'generateDocument', path: '/title', op: 'exists', mode: 'ask' }]);
  });

  it('keeps one session per server across calls (initialize once)', async () => {
    const made = await setup({ orders__lookup_order: 'allow' });
    const before = orders.requests.initialize;
    for (let i = 0; i < 3; i++) {
      model.script(callThenReport('orders__lookup_order', { orderId: `F-${i}` }));
      const row = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
      expect(row.execution.result.text).toContain(`F-${i}`);
    }
    // Creating the server opened one session of its own (the listing); the runs shared one more.
    expect(orders.requests.initialize - before).toBeLessThanOrEqual(1);
  });

  it('a connection reset before the server answered: a read-only call is sent once more and runs once; a destructive one is not', async () => {
    const made = await setup({ orders__lookup_order: 'allow', orders__refund_order: 'allow' });
    orders.resetNextCalls(1);
    model.script(callThenReport('orders__lookup_order', { orderId: 'R-1' }));
    const looked = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
    const [lookup] = looked.execution.toolCalls;
    expect(lookup).toMatchObject({ status: 'completed', output: { value: { orderId: 'R-1', status: 'shipped' } } });
    expect(effectsOf(lookup.toolCallId)).toHaveLength(1);

    // A refund may have been done when its connection is lost: it is not sent again, and the model is told so.
    orders.resetNextCalls(1);
    model.script(callThenReport('orders__refund_order', { orderId: 'R-2', amount: 5 }));
    const refunded = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
    const [refund] = refunded.execution.toolCalls;
    expect(refund.status).toBe('failed');
    expect(JSON.stringify(refund.output)).toMatch(/failed before it answered \(.*\); it may or may not have done it/);
    expect(effectsOf(refund.toolCallId)).toEqual([]);

    // Sent once more, once: a read-only call whose second connection is lost too fails, and may have been done.
    orders.resetNextCalls(3);
    model.script(callThenReport('orders__lookup_order', { orderId: 'R-3' }));
    const lost = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
    const [twice] = lost.execution.toolCalls;
    expect(twice.status).toBe('failed');
    expect(JSON.stringify(twice.output)).toMatch(/failed before it answered \(.*\); it may or may not have done it/);
    expect(effectsOf(twice.toolCallId)).toEqual([]);
    expect(orders.callsToReset()).toBe(1);
  });
});
