import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitingToolCall } from '../../../test/helpers/refunds.ts';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { type ChatRequest, calledTools, toolResults } from '../../../test/helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let orders: TestMcpServer;
beforeAll(async () => {
  orders = await startTestMcpServer();
});
afterAll(async () => orders?.close());
useAppWithModel({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, (started) => {
  ({ app, model } = started);
});

/** Proposes a refund of 250, then says what the tool answered. */
const refund = (request: ChatRequest) =>
  calledTools(request)
    ? { text: `Tool said: ${JSON.stringify(toolResults(request).at(-1)!.content)}` }
    : { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'A-1', amount: 250 } }] };

/** A refund waiting for a person in a new tenant, and its admin's decision on it (`approve` or `respond`). */
async function decideWaitingRefund(verb: 'approve' | 'respond', body: unknown) {
  const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'ask' } });
  const { org, token } = setup.tenant;
  const { actionId, toolCallId } = await waitingToolCall(app, setup, { orders, model, script: refund });
  const path = `/orgs/${org.slug}/actions/${actionId}/tool-calls/${toolCallId}/${verb}`;
  return { setup, actionId, decided: await app.request('POST', path, { token, body }) };
}

describe('approve with edits', () => {
  it("runs the edited arguments, never the model's; refuses invalid (400) and denied (422) edits, the call still waiting", async () => {
    const setup = await setupWebhook(
      app,
      {},
      {
        approvalRules: { orders__refund_order: 'ask' },
        argumentRules: [{ tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 300, mode: 'deny' }],
      },
    );
    const { org, token } = setup.tenant;
    const { actionId, toolCallId } = await waitingToolCall(app, setup, { orders, model, script: refund });
    const approve = (body: unknown) =>
      app.request('POST', `/orgs/${org.slug}/actions/${actionId}/tool-calls/${toolCallId}/approve`, { token, body });

    const refused: Array<[unknown, number, RegExp]> = [
      [{ arguments: { orderId: 'A-1', amount: 'lots' } }, 400, /^body\/arguments\/amount must be number/],
      [{ arguments: { orderId: 'A-1' } }, 400, /^body\/arguments\/amount is required$/],
      [{ arguments: [1, 2] }, 400, /arguments/],
      [{ arguments: 'refund it' }, 400, /arguments/],
      [{ arguments: { orderId: 'A-1', amount: 500 } }, 422, /argument rule 1 \(orders__refund_order: \/amount gt 300 -> deny\)/],
      [{ arguments: { orderId: 'A-1\u0000', amount: 5 } }, 400, /NUL|U\+0000/],
      [{ arguments: { orderId: 'A-1\ud800', amount: 5 } }, 400, /surrogate/],
      [{ arguments: { orderId: 'x'.repeat(2_000_000), amount: 5 } }, 413, /./],
    ];
    for (const [body, status, message] of refused) {
      const response = await approve(body);
      const answer = await response.json();
      expect(response.status, JSON.stringify(answer)).toBe(status);
      expect(answer.error).toMatch(message);
    }
    const waiting = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect(waiting.execution.toolCalls[0]).toMatchObject({ status: 'staged', approvedInput: null });

    const approved = await approve({ arguments: { orderId: 'A-1', amount: 200 }, reason: 'the customer asked for 200' });
    expect(approved.status).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const [call] = done.execution.toolCalls;
    expect(call).toMatchObject({
      input: { orderId: 'A-1', amount: 250 },
      approvedInput: { orderId: 'A-1', amount: 200 },
      approval: 'approved',
      channel: 'api',
      reason: 'the customer asked for 200',
    });
    expect(
      orders.sideEffects.filter((effect) => effect.toolCallId === call.toolCallId).map((effect) => effect.arguments),
    ).toEqual([{ orderId: 'A-1', amount: 200 }]);
    // The model's next step knew a person changed the call.
    expect(done.execution.result.text).toContain('A reviewer changed the arguments of this call before approving it');
    expect(done.execution.result.text).toContain('Refunded 200 on order A-1');
    const approvedEvent = done.lifecycleEvents.find((event: { status: string }) => event.status === 'approved');
    expect(approvedEvent.data).toMatchObject({ argumentsEdited: true, channel: 'api' });
  });

  it("counts the model's own arguments, sent through an edit, as no edit", async () => {
    const {
      setup,
      actionId,
      decided: approved,
    } = await decideWaitingRefund('approve', {
      arguments: { amount: 250, orderId: 'A-1' },
      reason: 'looked at it',
    });
    const answer = await approved.json();
    expect(approved.status, JSON.stringify(answer)).toBe(200);
    expect(answer.approvals).toEqual([expect.objectContaining({ argumentsEdited: false, reason: 'looked at it' })]);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.execution.toolCalls[0]).toMatchObject({ approvedInput: null, approval: 'approved' });
    expect(done.execution.result.text).not.toContain('A reviewer changed the arguments');
    const approvedEvent = done.lifecycleEvents.find((event: { status: string }) => event.status === 'approved');
    expect(approvedEvent.data).toMatchObject({ argumentsEdited: false });
  });

  it("checks an edit against the org's tools read anew (its MCP servers changed meanwhile), outside the decision's transaction", async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'ask' } });
    const { org, token } = setup.tenant;
    const { actionId, toolCallId } = await waitingToolCall(app, setup, { orders, model, script: refund });
    // Another server of the org: its tools are read from the database again at the next use. Read within the
    // decision's transaction, on PGlite's one connection, that read waited for the transaction for ever.
    const added = await app.request('POST', `/orgs/${org.slug}/mcp-servers`, {
      token,
      body: { name: 'billing', url: orders.url },
    });
    expect(added.status).toBe(201);
    const approve = (body: unknown) =>
      app.request('POST', `/orgs/${org.slug}/actions/${actionId}/tool-calls/${toolCallId}/approve`, { token, body });
    expect((await approve({ arguments: { orderId: 'A-1', amount: 'lots' } })).status).toBe(400);
    expect((await approve({ arguments: { orderId: 'A-1', amount: 120 } })).status).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.execution.toolCalls[0]).toMatchObject({ approvedInput: { orderId: 'A-1', amount: 120 }, status: 'completed' });
  });
});

describe('send back with guidance', () => {
  it("leaves the ledger's approval state at sent_back, not approved, when nothing waits again", async () => {
    const { setup, actionId, decided: sent } = await decideWaitingRefund('respond', { message: 'No refund: the order shipped' });
    const { org, token } = setup.tenant;
    expect(sent.status).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', approvalState: 'sent_back' });
    const ledger = await (await app.request('GET', `/orgs/${org.slug}/ledger?limit=5`, { token })).json();
    expect(ledger.rows.find((row: { actionId: string }) => row.actionId === actionId).approvalState).toBe('sent_back');
  });

  it('the call does not run; the model gets the message, proposes another call that waits under the rules, and the action completes', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'ask' } });
    const { org, token } = setup.tenant;
    await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: orders.url } });
    await app.request('PATCH', `/orgs/${org.slug}/agents/${setup.agentId}`, { token, body: { tools: ['orders__refund_order'] } });
    // Refunds 250; told "Refund 200 instead", refunds 200; then reports.
    model.script((request) => {
      const results = toolResults(request);
      const last = JSON.stringify(results.at(-1)?.content ?? '');
      if (results.length === 0)
        return { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'B-2', amount: 250 } }] };
      if (last.includes('sent this call back'))
        return { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'B-2', amount: 200 } }] };
      return { text: `Tool said: ${last}` };
    });
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const pending = async () => (await (await app.request('GET', `/orgs/${org.slug}/approvals`, { token })).json()).approvals;
    const [first] = await pending();
    const respond = (toolCallId: string, body: unknown) =>
      app.request('POST', `/orgs/${org.slug}/actions/${actionId}/tool-calls/${toolCallId}/respond`, { token, body });
    for (const body of [{ message: '' }, { message: 'x'.repeat(2001) }, {}, { message: 7 }]) {
      const refused = await respond(first.toolCallId, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
    }
    const sent = await respond(first.toolCallId, { message: 'Refund 200 instead, the customer agreed' });
    expect(sent.status).toBe(200);
    expect(await sent.json()).toMatchObject({ status: 'sent_back', reason: 'Refund 200 instead, the customer agreed' });

    // The agent's next proposal follows the rules again: it waits.
    const again = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect(again.execution.toolCalls.map((call: any) => [call.status, call.input.amount])).toEqual([
      ['sent_back', 250],
      ['staged', 200],
    ]);
    const [second] = await pending();
    expect(
      (await app.request('POST', `/orgs/${org.slug}/actions/${actionId}/tool-calls/${second.toolCallId}/approve`, { token }))
        .status,
    ).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed', 'rejected']);
    expect(done.status).toBe('completed');
    const effects = orders.sideEffects.filter((effect) =>
      done.execution.toolCalls.some((call: any) => call.toolCallId === effect.toolCallId),
    );
    expect(effects.map((effect) => effect.arguments)).toEqual([{ orderId: 'B-2', amount: 200 }]);
    const decisions = done.lifecycleEvents.filter((event: { status: string }) => event.status === 'approved');
    expect(decisions.map((event: any) => event.data.kind)).toEqual(['send_back', 'approve']);
    expect(decisions[0].cause).toBe('orders__refund_order sent back: Refund 200 instead, the customer agreed');
  });
});
