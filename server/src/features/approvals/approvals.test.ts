import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { documentThenText } from '../../../test/helpers/fake-model.ts';
import { addCallback, auth, runEvent as postAndRun } from '../../../test/helpers/callbacks.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import { POLL_FOR_DUE_WORK, TEST_APP_HOST, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
useAppWithModel(
  {
    MODEL_TIMEOUT_SECONDS: '3',
    MODEL_MAX_RETRIES: '1',
    ACTION_MAX_STEPS: '4',
    CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    ...POLL_FOR_DUE_WORK, // the deadline's job
  },
  (started) => {
    ({ app, model } = started);
  },
);
const runEvent = (setup: WebhookSetup, payload: Record<string, unknown> = {}) =>
  postAndRun(app, setup, { data: { orderId: 42 }, ...payload });

describe('approvals', () => {
  const approvals = (setup: WebhookSetup, query = '') =>
    app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals${query}`, { token: setup.tenant.token }).then((r) => r.json());
  const decide = (
    setup: WebhookSetup,
    actionId: string,
    toolCallId: string,
    verb: 'approve' | 'reject',
    body?: unknown,
    token = setup.tenant.token,
  ) =>
    app.request('POST', `/orgs/${setup.tenant.org.slug}/actions/${actionId}/tool-calls/${toolCallId}/${verb}`, { token, body });

  /** An action waiting on its one staged generateDocument call. */
  async function stagedCall() {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    model.script(documentThenText());
    const actionId = await runEvent(setup);
    const pending = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const [{ toolCallId }] = (await approvals(setup)).approvals;
    return { setup, actionId, toolCallId: toolCallId as string, pending };
  }

  it('ask: stages the call; approving runs it and the action completes with its result; deciding again is 409', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    model.script(documentThenText());
    const actionId = await runEvent(setup, { externalId: 'ord-42' });
    const pending = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect(pending.approvalState).toBe('pending');
    const listed = await approvals(setup, '?status=pending');
    expect(listed.approvals).toEqual([
      expect.objectContaining({
        actionId,
        eventType: 'order.created',
        externalId: 'ord-42',
        toolName: 'generateDocument',
        mode: 'ask',
        status: 'pending',
        runAsUserId: setup.tenant.admin.id,
        input: { title: 'Order 42', content: expect.any(String) },
        requestedAt: expect.any(String),
        expiresAt: expect.any(String),
        decidedBy: null,
      }),
    ]);
    const { toolCallId, requestedAt, expiresAt } = listed.approvals[0];
    expect(Date.parse(expiresAt) - Date.parse(requestedAt)).toBe(86_400_000);

    const approved = await decide(setup, actionId, toolCallId, 'approve');
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({
      toolCallId,
      status: 'approved',
      decidedBy: setup.tenant.admin.id,
      decidedAt: expect.any(String),
    });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.result.text).toMatch(/documentId/);
    expect(done.lifecycleEvents.map((event: { status: string }) => event.status)).toEqual([
      'queued',
      'running',
      'pending_approval',
      'approved',
      'running',
      'completed',
    ]);
    expect(done.lifecycleEvents[3].data).toMatchObject({ toolCallId, decidedBy: setup.tenant.admin.id });

    for (const verb of ['approve', 'reject'] as const) {
      const again = await decide(setup, actionId, toolCallId, verb);
      expect(again.status).toBe(409);
      expect(await again.json()).toEqual({ error: 'This tool call was approved already', code: 'already_decided' });
    }
    expect((await approvals(setup)).approvals).toEqual([]);
    expect((await approvals(setup, '?status=approved')).approvals).toHaveLength(1);
  });

  it('records how each decision was made: the console (its session cookie) or the API (a bearer token); the callback carries the channel and the approver', async () => {
    const api = await stagedCall();
    // A receiver that is not there: the callbacks are written (and retried) all the same.
    await addCallback(app, api.setup, { url: 'http://127.0.0.1:9/callbacks', events: ['action.approved'] });
    expect(await (await decide(api.setup, api.actionId, api.toolCallId, 'approve')).json()).toMatchObject({
      status: 'approved',
      channel: 'api',
    });
    const approved = await waitForAction(app, auth(api.setup), api.actionId, ['completed', 'failed']);
    expect(approved.execution.toolCalls[0]).toMatchObject({ channel: 'api', refusedAttempts: [] });
    expect(approved.lifecycleEvents[3].data).toMatchObject({ channel: 'api', approverId: api.setup.tenant.admin.id });
    const [callback] = approved.callbacks;
    expect(callback).toMatchObject({ eventType: 'action.approved' });
    expect(callback.payload.data.decision).toMatchObject({ channel: 'api', approverId: api.setup.tenant.admin.id });

    // The console signs in with its cookie (and sends its origin).
    const consoleCall = await stagedCall();
    const { org, token } = consoleCall.setup.tenant;
    const rejected = await app.request(
      'POST',
      `/orgs/${org.slug}/actions/${consoleCall.actionId}/tool-calls/${consoleCall.toolCallId}/reject`,
      {
        cookie: token,
        headers: { origin: TEST_APP_HOST },
        body: { reason: 'no' },
      },
    );
    expect(await rejected.json()).toMatchObject({ status: 'rejected', channel: 'console' });
    const row = await waitForAction(app, auth(consoleCall.setup), consoleCall.actionId, ['rejected']);
    expect(row.execution.toolCalls[0].channel).toBe('console');
    expect(row.lifecycleEvents.at(-1).data).toMatchObject({ channel: 'console', approverId: consoleCall.setup.tenant.admin.id });

    // Too late: refused, and on the record with its channel, who tried and why.
    expect((await decide(consoleCall.setup, consoleCall.actionId, consoleCall.toolCallId, 'approve')).status).toBe(409);
    const after = await waitForAction(app, auth(consoleCall.setup), consoleCall.actionId, ['rejected']);
    expect(after.execution.toolCalls[0].refusedAttempts).toEqual([
      {
        channel: 'api',
        userId: consoleCall.setup.tenant.admin.id,
        externalUserId: null,
        reason: 'This tool call was rejected already',
        at: expect.any(String),
      },
    ]);

    const metrics = await (await app.request('GET', '/metrics')).text();
    expect(metrics).toMatch(/approval_decisions_total\{channel="api",decision="approved"\} [1-9]/);
    expect(metrics).toMatch(/approval_decisions_total\{channel="console",decision="rejected"\} [1-9]/);
    expect(metrics).toMatch(/approval_decision_seconds_count\{channel="api"\} [1-9]/);
  });

  it('reject: the action ends rejected with the reason, and the tool never runs', async () => {
    const { setup, actionId, toolCallId } = await stagedCall();
    const rejected = await decide(setup, actionId, toolCallId, 'reject', { reason: 'Not for this customer' });
    expect(await rejected.json()).toMatchObject({ status: 'rejected', reason: 'Not for this customer' });
    const row = await waitForAction(app, auth(setup), actionId, ['rejected']);
    expect(row.approvalState).toBe('rejected');
    expect(row.lifecycleEvents.at(-1)).toMatchObject({
      status: 'rejected',
      cause: 'generateDocument rejected: Not for this customer',
    });
    expect(row.execution.toolCalls[0]).toMatchObject({ status: 'rejected', output: null });
    // The ledger's list row says why, as the detail's last lifecycle event does.
    const listed = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger?status=rejected`, { token: setup.tenant.token })
    ).json();
    expect(listed.rows.find((listedRow: { actionId: string }) => listedRow.actionId === actionId).reason).toBe(
      'generateDocument rejected: Not for this customer',
    );
    const documents = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/documents`, { token: setup.tenant.token })
    ).json();
    expect(documents.documents).toEqual([]);
  });

  it('deleting the agent, rule and webhook of a waiting action: the ledger still names them, and approving fails the action cleanly', async () => {
    const { setup, actionId, toolCallId } = await stagedCall();
    const { org } = setup.tenant;
    for (const path of [`webhooks/${setup.webhook.id}`, `agents/${setup.agentId}`, `action-rules/${setup.ruleId}`]) {
      expect((await app.request('DELETE', `/orgs/${org.slug}/${path}`, { token: setup.tenant.token })).status).toBe(204);
    }
    expect((await decide(setup, actionId, toolCallId, 'approve')).status).toBe(200);
    const row = await waitForAction(app, auth(setup), actionId, ['failed']);
    expect(row.execution.error).toBe(`The action's agent (${setup.agentId}) was deleted after the action was created`);
    expect(row).toMatchObject({
      webhookId: setup.webhook.id,
      execution: { agentId: setup.agentId, actionRuleId: setup.ruleId, runAsUserId: setup.tenant.admin.id },
    });
    const documents = await (await app.request('GET', `/orgs/${org.slug}/documents`, { token: setup.tenant.token })).json();
    expect(documents.documents).toEqual([]);
  });

  it("a staged call not decided by its rule's deadline expires, by the scheduled job", async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' }, approvalTimeoutSeconds: 1 });
    model.script(documentThenText());
    const actionId = await runEvent(setup);
    const row = await waitForAction(app, auth(setup), actionId, ['expired'], 20_000);
    expect(row.approvalState).toBe('expired');
    expect(row.lifecycleEvents.map((event: { status: string }) => event.status)).toEqual([
      'queued',
      'running',
      'pending_approval',
      'expired',
    ]);
    const [call] = (await approvals(setup, '?status=expired')).approvals;
    expect(call).toMatchObject({ actionId, status: 'expired', decidedBy: null, reason: 'not decided before the deadline' });
    expect((await decide(setup, actionId, call.toolCallId, 'approve')).status).toBe(409);
  });

  it('another tenant can neither list nor decide the approvals, nor read the thread', async () => {
    const { setup, actionId, toolCallId, pending: row } = await stagedCall();
    const other = await setupWebhook(app);
    expect((await approvals(other)).approvals).toEqual([]);
    const foreignOrg = await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals`, { token: other.tenant.token });
    expect(foreignOrg.status).toBe(404);
    for (const verb of ['approve', 'reject'] as const) {
      expect((await decide(setup, actionId, toolCallId, verb, undefined, other.tenant.token)).status).toBe(404);
      // Through their own org: the action is not theirs.
      expect(
        (
          await app.request('POST', `/orgs/${other.tenant.org.slug}/actions/${actionId}/tool-calls/${toolCallId}/${verb}`, {
            token: other.tenant.token,
          })
        ).status,
      ).toBe(404);
    }
    expect(
      (await app.request('GET', `/api/threads/${row.execution.threadId}/messages`, { token: other.tenant.token })).status,
    ).toBe(404);
    expect((await approvals(setup)).approvals).toHaveLength(1);
  });

  it("lists a call's action without an external id as null, as its sender gave none", async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    model.script(documentThenText());
    const actionId = await runEvent(setup, { externalId: undefined });
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect((await approvals(setup)).approvals).toEqual([
      expect.objectContaining({ actionId, eventType: 'order.created', externalId: null, email: null }),
    ]);
  });

  it('answers 404 for an unknown action or call, and 400 for a bad status filter', async () => {
    const setup = await setupWebhook(app);
    expect((await decide(setup, randomUUID(), 'call_x', 'approve')).status).toBe(404);
    const bad = await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals?status=maybe`, { token: setup.tenant.token });
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe('validation_failed');
  });
});

describe('agent mode (fail-closed)', () => {
  const cases: Array<[string, unknown, 'completed' | 'pending_approval']> = [
    ['"no approval needed" runs at once', { title: 'T', content: 'c', approvalDecision: 'no_approval_needed' }, 'completed'],
    ['"approval needed" stages', { title: 'T', content: 'c', approvalDecision: 'approval_needed' }, 'pending_approval'],
    ['"unsure" stages', { title: 'T', content: 'c', approvalDecision: 'unsure' }, 'pending_approval'],
    ['a missing decision stages', { title: 'T', content: 'c' }, 'pending_approval'],
    ['a malformed decision stages', { title: 'T', content: 'c', approvalDecision: 'No Approval Needed!' }, 'pending_approval'],
    ['arguments that are not JSON stage', '{"title": "T", "content": ', 'pending_approval'],
  ];
  for (const [name, args, expected] of cases) {
    it(name, async () => {
      const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'agent' } });
      model.script(documentThenText(args));
      const actionId = await runEvent(setup);
      const row = await waitForAction(app, auth(setup), actionId, ['completed', 'pending_approval', 'failed']);
      expect(row.status).toBe(expected);
      expect(row.execution.toolCalls[0]).toMatchObject({
        mode: 'agent',
        approval: expected === 'completed' ? 'not_required' : 'pending',
      });
      if (expected === 'completed') expect(row.execution.toolCalls[0].input).toEqual({ title: 'T', content: 'c' });
    });
  }

  it('shows the model the decision field as required, and tells it the policy', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'agent' } });
    model.script(documentThenText({ title: 'T', content: 'c', approvalDecision: 'no_approval_needed' }));
    await waitForAction(app, auth(setup), await runEvent(setup), ['completed']);
    const request = model.requests.at(-2)!;
    const parameters = request.tools![0]!.function.parameters;
    expect(parameters.required).toEqual(expect.arrayContaining(['title', 'content', 'approvalDecision']));
    expect(parameters.properties.approvalDecision.enum).toEqual(['no_approval_needed', 'approval_needed', 'unsure']);
    expect(request.messages[0]!.content).toContain('Approval policy for the tools "generateDocument"');
  });
});
