import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitingToolCall } from '../../../test/helpers/refunds.ts';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth } from '../../../test/helpers/callbacks.ts';
import { createUser, signIn } from '../../../test/helpers/factories.ts';
import { type ChatRequest, calledTools } from '../../../test/helpers/fake-model.ts';
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
useAppWithModel({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, (started) => {
  ({ app, model } = started);
});

/** Proposes a refund of 250, then says it is done. */
const refund = (request: ChatRequest) =>
  calledTools(request)
    ? { text: 'Done.' }
    : { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'A-1', amount: 250 } }] };

interface Waiting {
  setup: WebhookSetup;
  actionId: string;
  toolCallId: string;
  /** Three admins' tokens (the rule's approvers: the org's admins). */
  tokens: string[];
  ids: string[];
}

/** A refund waiting under a rule with minApprovals 2, decided by the org's three admins. */
async function waitingForTwo(): Promise<Waiting> {
  const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'ask' } });
  const { org, token } = setup.tenant;
  const others = [
    await createUser(app, { role: 'Admin', org: org.slug }),
    await createUser(app, { role: 'Admin', org: org.slug }),
  ];
  const rule = await app.request('PATCH', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, {
    token,
    body: { minApprovals: 2 },
  });
  expect(rule.status).toBe(200);
  expect((await rule.json()).minApprovals).toBe(2);
  const { actionId, toolCallId } = await waitingToolCall(app, setup, { orders, model, script: refund });
  const tokens = [token, ...(await Promise.all(others.map((user) => signIn(app, user))))];
  return { setup, actionId, toolCallId, tokens, ids: [setup.tenant.admin.id, ...others.map((user) => user.id)] };
}

const decide = (waiting: Waiting, verb: 'approve' | 'reject', token: string, body: unknown = {}) =>
  app.request(
    'POST',
    `/orgs/${waiting.setup.tenant.org.slug}/actions/${waiting.actionId}/tool-calls/${waiting.toolCallId}/${verb}`,
    { token, body },
  );
const refunds = (toolCallId: string) =>
  orders.sideEffects.filter((effect) => effect.toolCallId === toolCallId).map((effect) => effect.arguments);

describe('minApprovals', () => {
  it('one approval runs nothing; the same person twice counts once; a second person runs the call once', async () => {
    const waiting = await waitingForTwo();
    const [first, second] = waiting.tokens;

    const once = await decide(waiting, 'approve', first!);
    expect(once.status).toBe(200);
    expect(await once.json()).toMatchObject({
      status: 'pending',
      approvalsRequired: 2,
      approvals: [{ approverId: waiting.ids[0], channel: 'api', argumentsEdited: false, reason: null }],
    });
    // Again by the same person: still one approval.
    const again = await decide(waiting, 'approve', first!);
    expect(again.status).toBe(200);
    expect((await again.json()).approvals).toHaveLength(1);
    const pending = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
    expect(pending.execution.toolCalls[0]).toMatchObject({ status: 'staged', approvalsRequired: 2 });
    expect(refunds(waiting.toolCallId)).toEqual([]);
    // The inbox says how far it is.
    const listed = await (await app.request('GET', `/orgs/${waiting.setup.tenant.org.slug}/approvals`, { token: second })).json();
    expect(listed.approvals[0]).toMatchObject({ approvalsRequired: 2, approvals: [{ approverId: waiting.ids[0] }] });

    const twice = await decide(waiting, 'approve', second!, { reason: 'checked the order' });
    expect(twice.status).toBe(200);
    expect(await twice.json()).toMatchObject({ status: 'approved', decidedBy: waiting.ids[1], approvals: [{}, {}] });
    const done = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(refunds(waiting.toolCallId)).toEqual([{ orderId: 'A-1', amount: 250 }]);
    expect(done.execution.toolCalls[0].approvals).toEqual([
      expect.objectContaining({ approverId: waiting.ids[0], superseded: false, reason: null }),
      expect.objectContaining({ approverId: waiting.ids[1], superseded: false, reason: 'checked the order' }),
    ]);
    // A third approval comes too late.
    expect((await decide(waiting, 'approve', waiting.tokens[2]!)).status).toBe(409);
  });

  it('a rejection after one approval rejects the call', async () => {
    const waiting = await waitingForTwo();
    expect((await decide(waiting, 'approve', waiting.tokens[0]!)).status).toBe(200);
    const rejected = await decide(waiting, 'reject', waiting.tokens[1]!, { reason: 'not this customer' });
    expect(rejected.status).toBe(200);
    const done = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['rejected', 'completed']);
    expect(done.status).toBe('rejected');
    expect(refunds(waiting.toolCallId)).toEqual([]);
  });

  it("an edit that differs from the first approver's starts the approvals again on the new arguments", async () => {
    const waiting = await waitingForTwo();
    const [first, second, third] = waiting.tokens;
    const edited = { orderId: 'A-1', amount: 200 };
    // The first approves with an edit; the second, with the same edit: that is two approvals of it.
    const firstEdit = await decide(waiting, 'approve', first!, { arguments: edited, reason: 'the customer asked for 200' });
    expect(await firstEdit.json()).toMatchObject({
      status: 'pending',
      approvedInput: edited,
      approvals: [{ argumentsEdited: true, reason: 'the customer asked for 200' }],
    });
    // The next approver sees why the arguments changed, before deciding.
    const inbox = await (await app.request('GET', `/orgs/${waiting.setup.tenant.org.slug}/approvals`, { token: second })).json();
    expect(inbox.approvals[0].approvals).toEqual([expect.objectContaining({ reason: 'the customer asked for 200' })]);
    // A second approver's other edit starts again: their approval is the only one of 180.
    const other = await decide(waiting, 'approve', second!, { arguments: { orderId: 'A-1', amount: 180 } });
    expect(await other.json()).toMatchObject({
      status: 'pending',
      approvedInput: { orderId: 'A-1', amount: 180 },
      approvals: [{ approverId: waiting.ids[1] }],
    });
    expect(refunds(waiting.toolCallId)).toEqual([]);
    // The third approves what stands now, without arguments: 180 runs.
    const last = await decide(waiting, 'approve', third!);
    expect(await last.json()).toMatchObject({ status: 'approved', approvals: [{}, {}] });
    const done = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(refunds(waiting.toolCallId)).toEqual([{ orderId: 'A-1', amount: 180 }]);
    const [call] = done.execution.toolCalls;
    expect(call).toMatchObject({ input: { orderId: 'A-1', amount: 250 }, approvedInput: { orderId: 'A-1', amount: 180 } });
    expect(call.approvals.map((approval: { superseded: boolean }) => approval.superseded)).toEqual([true, false, false]);
    // A superseded approval keeps what its approver wrote.
    expect(call.approvals[0]).toMatchObject({ approverId: waiting.ids[0], reason: 'the customer asked for 200' });
  });

  it('a rule cannot ask for more approvals than it has approvers, nor more than 5', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'ask' } });
    const { org, token } = setup.tenant;
    const patch = (body: unknown) => app.request('PATCH', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, { token, body });
    const tooMany = await patch({ minApprovals: 2 });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toEqual({
      code: 'validation_failed',
      error: 'body/minApprovals: 2 approvals needed, but the approvers are 1 member',
    });
    for (const minApprovals of [0, 6, 1.5, '2', null]) expect((await patch({ minApprovals })).status).toBe(400);
    const guest = await createUser(app, { role: 'Guest', org: org.slug });
    const named = await patch({ approvers: { userIds: [guest.id], role: 'Admin' }, minApprovals: 2 });
    expect(named.status).toBe(200);
    // Taking the named member away again leaves too few.
    expect((await patch({ approvers: { role: 'Admin' } })).status).toBe(400);
  });
});
