import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { addCallback, auth, runEvent, startCallbackStack, verifyWithLibrary } from '../../../test/helpers/callbacks.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createUser, signIn } from '../../../test/helpers/factories.ts';
import { calledTools } from '../../../test/helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

/** Budgets of orgs and agents, checked before each model call: pause for an approver, or fail. */
let stack: Awaited<ReturnType<typeof startCallbackStack>>;
let app: TestApp;
beforeAll(async () => {
  stack = await startCallbackStack({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', ACTION_CONCURRENCY: '5' });
  app = stack.app;
});
afterAll(async () => stack?.close());

const callbacksOf = (endpoint: { secret: string }, actionId: string, count: number) =>
  eventually(`${count} callbacks of ${actionId}`, () => {
    const received = stack.receiver.forAction(actionId);
    return received.length >= count ? received.map((callback) => verifyWithLibrary(endpoint.secret, callback)) : undefined;
  });
const setAgentBudget = async (setup: WebhookSetup, budget: unknown) => {
  const response = await app.request('PATCH', `/orgs/${setup.tenant.org.slug}/agents/${setup.agentId}`, {
    token: setup.tenant.token,
    body: { budget },
  });
  expect(response.status).toBe(200);
  return response.json();
};
const pendingBudgetCall = async (setup: WebhookSetup, actionId: string) => {
  const { approvals } = await (
    await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals`, { token: setup.tenant.token })
  ).json();
  return approvals.find((approval: { actionId: string }) => approval.actionId === actionId);
};

describe('budgets', () => {
  it("`fail`: once the org's budget is spent the next action fails with the reason, in the ledger and its callback", async () => {
    stack.model.script(() => ({ text: 'ok', usage: { prompt: 40, completion: 10 } }));
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: stack.receiver.url('/fail'), events: ['action.failed'] });
    const set = await app.request('PUT', `/orgs/${setup.tenant.org.slug}/budget`, {
      token: setup.tenant.token,
      body: { budget: { period: 'day', maxTokens: 50, onExceed: 'fail' } },
    });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ budget: { budget: { maxTokens: 50 }, spentTokens: 0 } });
    expect((await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed'])).status).toBe('completed');
    const calls = stack.model.requests.length;
    const refusedId = await runEvent(app, setup);
    const refused = await waitForAction(app, auth(setup), refusedId, ['completed', 'failed']);
    expect(refused.status).toBe('failed');
    expect(refused.execution.error).toMatch(
      /^budget exceeded: the organization has used 50 of 50 tokens this day \(resets \d{4}-/,
    );
    expect(stack.model.requests.length).toBe(calls); // refused before the model was called
    const { rows } = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger?status=failed`, { token: setup.tenant.token })
    ).json();
    expect(rows).toEqual([expect.objectContaining({ actionId: refusedId, reason: refused.execution.error })]);
    const [failed] = await callbacksOf(endpoint, refusedId, 1);
    expect(failed).toMatchObject({ type: 'action.failed', data: { status: 'failed', error: refused.execution.error } });
    const budgets = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/budgets`, { token: setup.tenant.token })
    ).json();
    expect(budgets).toMatchObject({
      org: { spentTokens: 50, budget: { period: 'day', maxTokens: 50, onExceed: 'fail' } },
      agents: [],
    });
    // The next UTC day, the budget starts again.
    app.clock.advance(86_400_000);
    try {
      expect((await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed'])).status).toBe(
        'completed',
      );
    } finally {
      app.clock.reset();
    }
  });

  it('`pause`: the action waits for an approver, who lets it go on once; a raised budget lets it finish', async () => {
    stack.model.script((request) =>
      calledTools(request)
        ? { text: 'Filed.', usage: { prompt: 10, completion: 5 } }
        : {
            toolCalls: [{ name: 'generateDocument', arguments: { title: 'A', content: 'a' } }],
            usage: { prompt: 10, completion: 5 },
          },
    );
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: stack.receiver.url('/pause') });
    const agent = await setAgentBudget(setup, { period: 'month', maxTokens: 30, onExceed: 'pause' });
    expect(agent.budget).toEqual({ period: 'month', maxTokens: 30, onExceed: 'pause' });
    // The first action spends the budget: its two calls take 30 tokens.
    expect((await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed'])).status).toBe('completed');
    const actionId = await runEvent(app, setup);
    const paused = await waitForAction(app, auth(setup), actionId, ['pending_approval', 'failed', 'completed']);
    expect(paused.status).toBe('pending_approval');
    expect(paused.lifecycleEvents.at(-1).cause).toMatch(
      /^budget exceeded: the agent "Helper" has used 30 of 30 tokens this month/,
    );
    const hold = await pendingBudgetCall(setup, actionId);
    expect(hold).toMatchObject({
      toolName: 'continueOverBudget',
      stagedReason: expect.stringMatching(/^budget exceeded/),
      status: 'pending',
    });
    const [pending] = (await callbacksOf(endpoint, actionId, 1)).filter((event) => event.type === 'action.pending_approval');
    expect(pending!.data).toMatchObject({ status: 'pending_approval', toolCall: { toolName: 'continueOverBudget' } });

    // Approved without more budget: the held call goes ahead once; the next one pauses again.
    const decide = (toolCallId: string, how = 'approve', body?: unknown) =>
      app.request('POST', `/orgs/${setup.tenant.org.slug}/actions/${actionId}/tool-calls/${toolCallId}/${how}`, {
        token: setup.tenant.token,
        body,
      });
    const approve = (toolCallId: string) => decide(toolCallId);
    // It is a question of going on, not a call: nothing to edit, nothing to send back.
    for (const [how, body, message] of [
      [
        'approve',
        { arguments: { tokens: 1000 } },
        'A run over its budget is approved or rejected as it stands; it has no arguments to edit',
      ],
      [
        'respond',
        { message: 'spend less' },
        'A run over its budget is approved or rejected as it stands; there is no call to send back',
      ],
    ] as const) {
      const refused = await decide(hold.toolCallId, how, body);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({ code: 'validation_failed', error: message });
    }
    expect((await approve(hold.toolCallId)).status).toBe(200);
    const again = await eventually('the second pause', async () => {
      const next = await pendingBudgetCall(setup, actionId);
      return next && next.toolCallId !== hold.toolCallId ? next : undefined;
    });
    const row = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect(row.execution.toolCalls.map((call: { toolName: string; status: string }) => [call.toolName, call.status])).toEqual([
      ['continueOverBudget', 'completed'],
      ['generateDocument', 'completed'],
      ['continueOverBudget', 'staged'],
    ]);
    expect(row.execution.usage).toMatchObject({ calls: 1, totalTokens: 15 });

    // A raised budget: approved, the run finishes within it.
    await setAgentBudget(setup, { period: 'month', maxTokens: 1000, onExceed: 'pause' });
    expect((await approve(again.toolCallId)).status).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const types = (await callbacksOf(endpoint, actionId, 5)).map((event) => event.type);
    expect(types).toEqual([
      'action.pending_approval',
      'action.approved',
      'action.pending_approval',
      'action.approved',
      'action.completed',
    ]);
    const budgets = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/budgets`, { token: setup.tenant.token })
    ).json();
    expect(budgets.agents).toEqual([expect.objectContaining({ agentId: setup.agentId, agentName: 'Helper', spentTokens: 60 })]);
  });

  it('a paused action whose budget call is rejected ends rejected', async () => {
    stack.model.script(() => ({ text: 'ok', usage: { prompt: 10, completion: 5 } }));
    const setup = await setupWebhook(app);
    await setAgentBudget(setup, { period: 'day', maxTokens: 0, onExceed: 'pause' });
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const hold = await pendingBudgetCall(setup, actionId);
    const rejected = await app.request(
      'POST',
      `/orgs/${setup.tenant.org.slug}/actions/${actionId}/tool-calls/${hold.toolCallId}/reject`,
      {
        token: setup.tenant.token,
        body: { reason: 'not this month' },
      },
    );
    expect(rejected.status).toBe(200);
    expect((await waitForAction(app, auth(setup), actionId, ['rejected'])).execution.usage.calls).toBe(0);
  });

  it('20 concurrent actions on two workers overspend a budget by at most one call per concurrent run', async () => {
    const second = await startTestApp({ ...stack.model.env, ACTION_CONCURRENCY: '5' }, { shareDatabaseWith: app });
    try {
      stack.model.script(() => ({ text: 'ok', usage: { prompt: 100, completion: 50 }, delayMs: 200 }));
      const setup = await setupWebhook(app);
      const budget = 600;
      await app.request('PUT', `/orgs/${setup.tenant.org.slug}/budget`, {
        token: setup.tenant.token,
        body: { budget: { period: 'day', maxTokens: budget, onExceed: 'fail' } },
      });
      stack.model.concurrency.max = 0;
      const ids = await Promise.all(Array.from({ length: 20 }, () => runEvent(app, setup)));
      const rows = await Promise.all(ids.map((id) => waitForAction(app, auth(setup), id, ['completed', 'failed'], 60_000)));
      const failed = rows.filter((row) => row.status === 'failed');
      expect(failed.length).toBeGreaterThan(0);
      for (const row of failed) expect(row.execution.error).toMatch(/^budget exceeded: the organization/);
      const spent = rows.reduce((total, row) => total + row.execution.usage.totalTokens, 0);
      // The runs did overlap (else the bound says nothing of concurrent admission), at most 5 at once in
      // each worker: at most 10 calls (150 tokens each) admitted before the others' spend was known.
      // (The model sees fewer at once than were admitted and not settled: it does not see the writes around a call.)
      expect(stack.model.concurrency.max).toBeGreaterThan(1);
      expect(stack.model.concurrency.max).toBeLessThanOrEqual(10);
      expect(spent).toBeGreaterThanOrEqual(budget);
      expect(spent).toBeLessThanOrEqual(budget + 10 * 150);
      // Every reservation was settled: the budget's spend is what the calls used.
      const budgets = await (
        await app.request('GET', `/orgs/${setup.tenant.org.slug}/budgets`, { token: setup.tenant.token })
      ).json();
      expect(budgets.org.spentTokens).toBe(spent);
    } finally {
      await second.close();
    }
  });

  it('bad budgets get 400 with the field; members who are not admins get 403', async () => {
    const setup = await setupWebhook(app);
    const { token, org } = auth(setup);
    for (const budget of [
      { period: 'week', maxTokens: 1, onExceed: 'fail' },
      { period: 'day', onExceed: 'fail' },
      { period: 'day', maxTokens: -1, onExceed: 'fail' },
      { period: 'day', maxTokens: 1.5, onExceed: 'fail' },
      { period: 'day', maxCostUsd: 'ten', onExceed: 'pause' },
      { period: 'day', maxTokens: 1, onExceed: 'stop' },
      { period: 'day', maxTokens: 1, onExceed: 'fail', extra: true },
      'lots',
    ]) {
      for (const [method, path] of [
        ['PUT', `/orgs/${org}/budget`],
        ['PATCH', `/orgs/${org}/agents/${setup.agentId}`],
      ] as const) {
        const response = await app.request(method, path, { token, body: { budget } });
        expect(response.status, `${method} ${JSON.stringify(budget)}`).toBe(400);
        expect(await response.json()).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('budget') });
      }
    }
    expect((await app.request('PUT', `/orgs/${org}/budget`, { token, body: {} })).status).toBe(400);
    const member = await signIn(app, await createUser(app, { org, role: 'Guest' }));
    expect((await app.request('PUT', `/orgs/${org}/budget`, { token: member, body: { budget: null } })).status).toBe(403);
    expect((await app.request('GET', `/orgs/${org}/budgets`, { token: member })).status).toBe(403);
    expect((await app.request('GET', `/orgs/${org}/budgets`)).status).toBe(401);
    // Removed: none applies.
    const removed = await app.request('PUT', `/orgs/${org}/budget`, { token, body: { budget: null } });
    expect(await removed.json()).toEqual({ budget: null });
  });
});
