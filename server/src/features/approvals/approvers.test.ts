import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { documentThenText } from '../../../test/helpers/fake-model.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
useAppWithModel({}, (started) => {
  ({ app, model } = started);
});

const approvals = async (setup: WebhookSetup, token: string) =>
  (await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals`, { token })).json();
const decide = (setup: WebhookSetup, actionId: string, toolCallId: string, verb: 'approve' | 'reject', token: string) =>
  app.request('POST', `/orgs/${setup.tenant.org.slug}/actions/${actionId}/tool-calls/${toolCallId}/${verb}`, {
    token,
    body: verb === 'reject' ? { reason: 'no' } : {},
  });

/** An action waiting on its one staged call, under a rule whose approvers are `approvers`. */
async function waitingUnder(approvers: (setup: WebhookSetup) => Promise<unknown>) {
  const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
  const rule = await app.request('PATCH', `/orgs/${setup.tenant.org.slug}/action-rules/${setup.ruleId}`, {
    token: setup.tenant.token,
    body: { approvers: await approvers(setup) },
  });
  expect(rule.status).toBe(200);
  model.script(documentThenText());
  const actionId = await runEvent(app, setup);
  await waitForAction(app, auth(setup), actionId, ['pending_approval']);
  const [{ toolCallId }] = (await approvals(setup, setup.tenant.token)).approvals;
  return { setup, actionId, toolCallId: toolCallId as string };
}

describe("who decides: the rule's approvers, on every channel", () => {
  it('a Guest the rule names sees and decides the call; an admin it does not name gets 403, recorded', async () => {
    let guestToken = '';
    const { setup, actionId, toolCallId } = await waitingUnder(async (made) => {
      const guest = await createUser(app, { role: 'Guest', org: made.tenant.org.slug });
      guestToken = await signIn(app, guest);
      return { userIds: [guest.id] };
    });
    const bystander = await signIn(app, await createUser(app, { role: 'Guest', org: setup.tenant.org.slug }));

    // The admin sees every waiting call, but may not decide this one.
    const refused = await decide(setup, actionId, toolCallId, 'approve', setup.tenant.token);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      code: 'not_an_approver',
      error:
        "Not one of this call's approvers: its action rule, or its inbox's assignment of the agent, names who may decide (by default, the org's admins)",
    });
    // A Guest the rule does not name sees nothing to decide, and decides nothing.
    expect((await approvals(setup, bystander)).approvals).toEqual([]);
    expect((await decide(setup, actionId, toolCallId, 'reject', bystander)).status).toBe(403);

    // The named Guest sees it, and decides it.
    expect((await approvals(setup, guestToken)).approvals).toEqual([expect.objectContaining({ actionId, toolCallId })]);
    const approved = await decide(setup, actionId, toolCallId, 'approve', guestToken);
    expect(approved.status).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const [call] = done.execution.toolCalls;
    expect(call).toMatchObject({ approval: 'approved', channel: 'api' });
    expect(call.refusedAttempts).toEqual([
      expect.objectContaining({ channel: 'api', userId: setup.tenant.admin.id, reason: expect.stringMatching(/^Not one of/) }),
      expect.objectContaining({ channel: 'api', reason: expect.stringMatching(/^Not one of/) }),
    ]);
    // The ledger stays the admins'.
    const ledger = await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger`, { token: guestToken });
    expect(ledger.status).toBe(403);
  });

  it("by default the org's admins decide, and a Guest does not", async () => {
    const { setup, actionId, toolCallId } = await waitingUnder(async () => null);
    const guest = await signIn(app, await createUser(app, { role: 'Guest', org: setup.tenant.org.slug }));
    expect((await approvals(setup, guest)).approvals).toEqual([]);
    expect((await decide(setup, actionId, toolCallId, 'approve', guest)).status).toBe(403);
    expect((await decide(setup, actionId, toolCallId, 'approve', setup.tenant.token)).status).toBe(200);
  });

  it('two approvers deciding at once: one decision wins, the other is 409 and recorded', async () => {
    let second = '';
    let secondId = '';
    const { setup, actionId, toolCallId } = await waitingUnder(async (made) => {
      const other = await createUser(app, { role: 'Admin', org: made.tenant.org.slug });
      second = await signIn(app, other);
      secondId = other.id;
      return null; // the org's admins: both of them
    });
    const answers = await Promise.all([
      decide(setup, actionId, toolCallId, 'approve', setup.tenant.token),
      decide(setup, actionId, toolCallId, 'reject', second),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    const loser = answers.find((answer) => answer.status === 409)!;
    expect((await loser.json()).code).toBe('already_decided');
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'rejected', 'failed']);
    const [call] = done.execution.toolCalls;
    const winner = call.approverId;
    expect([setup.tenant.admin.id, secondId]).toContain(winner);
    expect(call.refusedAttempts).toEqual([
      expect.objectContaining({ channel: 'api', userId: winner === secondId ? setup.tenant.admin.id : secondId }),
    ]);
  });

  // The runners' claim skips locked rows. A decision that comes to nothing still locks the action, and
  // the runners' claim after the approval can come while it does: without a wake-up of its own at the
  // end, the action waited for the poll (off in these tests: the wait fails them).
  it('decisions that come to nothing beside the one that approves: the action runs at once', async () => {
    const { setup, actionId, toolCallId } = await waitingUnder(async () => null);
    const slug = setup.tenant.org.slug;
    const stranger = await createTenant(app);
    // Another org's admin naming this action under their own org (not theirs: they lock nothing of it), and
    // this org's admin naming a tool call the action does not have, each again and again while it is approved.
    const attempts = [
      { path: `/orgs/${stranger.org.slug}/actions/${actionId}/tool-calls/${toolCallId}/approve`, token: stranger.token },
      { path: `/orgs/${slug}/actions/${actionId}/tool-calls/call_missing/approve`, token: setup.tenant.token },
    ];
    const statuses: number[] = [];
    const streams = [...attempts, ...attempts].map(async ({ path, token }) => {
      for (let i = 0; i < 25; i++) statuses.push((await app.request('POST', path, { token, body: {} })).status);
    });
    // Awaited together, so that no stream's failure is left unhandled while the test waits on another.
    const [approved] = await Promise.all([decide(setup, actionId, toolCallId, 'approve', setup.tenant.token), ...streams]);
    expect(approved.status).toBe(200);
    expect(statuses).toEqual(Array(100).fill(404));
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
  });
});
