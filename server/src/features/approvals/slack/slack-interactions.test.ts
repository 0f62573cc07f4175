import { beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../../test/helpers/actions.ts';
import { auth } from '../../../../test/helpers/callbacks.ts';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { signIn } from '../../../../test/helpers/factories.ts';
import { useSlackApprovals } from '../../../../test/helpers/slack-approvals.ts';
import type { TestApp } from '../../../../test/helpers/test-app.ts';

const slackApprovals = useSlackApprovals();
const { waitingRefund, twoApprovals, messageOf, buttonsOf, click, submit, refunds, openedView } = slackApprovals;
let app: TestApp;
beforeAll(() => ({ app } = slackApprovals.started));

describe('approve with edits in Slack', () => {
  it("keeps the approver's why: on the record, and quoted in the message for the next approver", async () => {
    const waiting = await waitingRefund();
    const { org, token } = waiting.setup.tenant;
    const { second } = await twoApprovals(waiting);
    const message = await messageOf(waiting.actionId);
    await click(waiting, waiting.adminSlackId, 'edit', buttonsOf(message)[1].value);
    const view = await openedView('edit', waiting.actionId);
    const why = view.blocks.find((block: any) => block.block_id === 'why');
    expect(why).toMatchObject({ type: 'input', optional: true, label: { text: 'Why (optional)' } });

    const submitted = await submit(waiting, waiting.adminSlackId, view, {
      'arg:orderId': 'A-1',
      'arg:amount': '200',
      why: '  The customer asked for 200 <not 250> & no more  ',
    });
    expect(await submitted.text()).toBe('');
    const counted = `1 of 2 approvals: <@${waiting.adminSlackId}> (“The customer asked for 200 &lt;not 250&gt; &amp; no more”)`;
    await eventually('the message quoting why', async () => JSON.stringify(message.blocks).includes(counted) || undefined);
    expect(JSON.stringify(message.blocks)).toContain('(arguments edited by an approver)');
    const inbox = await (await app.request('GET', `/orgs/${org.slug}/approvals`, { token })).json();
    expect(inbox.approvals.find((item: any) => item.toolCallId === waiting.toolCallId)).toMatchObject({
      approvedInput: { orderId: 'A-1', amount: 200 },
      approvals: [{ channel: 'slack', argumentsEdited: true, reason: 'The customer asked for 200 <not 250> & no more' }],
    });

    // The second approver, through the API, approves the edit as it stands.
    const approved = await app.request(
      'POST',
      `/orgs/${org.slug}/actions/${waiting.actionId}/tool-calls/${waiting.toolCallId}/approve`,
      {
        token: await signIn(app, second),
        body: {},
      },
    );
    expect(approved.status).toBe(200);
    await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed']);
    expect(refunds(waiting.toolCallId)).toEqual([{ orderId: 'A-1', amount: 200 }]);
  });

  it('never cuts a value longer than a Slack field holds: it is kept as it is, and the other fields edited', async () => {
    const orderId = `A-${'7'.repeat(3_500)}`;
    const waiting = await waitingRefund({ orderId, amount: 250 });
    await click(waiting, waiting.adminSlackId, 'edit', buttonsOf(await messageOf(waiting.actionId))[1].value);
    const view = await openedView('edit', waiting.actionId);
    expect(view.blocks.filter((block: any) => block.type === 'input').map((block: any) => block.block_id)).toEqual([
      'arg:amount',
      'why',
    ]);
    const kept = view.blocks.find((block: any) => block.type === 'context');
    expect(kept.elements[0].text).toBe('`orderId`: 3,502 characters, more than a Slack field holds: kept as it is');

    expect(await (await submit(waiting, waiting.adminSlackId, view, { 'arg:amount': '200' })).text()).toBe('');
    const done = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(refunds(waiting.toolCallId)).toEqual([{ orderId, amount: 200 }]);
    expect(done.execution.toolCalls[0].approvedInput).toEqual({ orderId, amount: 200 });
  });

  it('a modal Slack does not open (a trigger that is not, or no longer, valid) is said to the clicker; nothing is decided', async () => {
    const waiting = await waitingRefund();
    const { slack } = slackApprovals.started;
    const edit = buttonsOf(await messageOf(waiting.actionId))[1].value;
    await click(waiting, waiting.adminSlackId, 'edit', edit, 'a-trigger-slack-never-issued');
    const said = await eventually('an ephemeral answer', async () =>
      slack.callsOf('chat.postEphemeral').find((call) => call.args.user === waiting.adminSlackId),
    );
    expect(said.args.text).toBe(
      'Slack did not open the form (invalid_trigger_id); nothing was decided. Try again, or use the console.',
    );
    await click(waiting, waiting.adminSlackId, 'edit', edit);
    expect((await openedView('edit', waiting.actionId)).callback_id).toBe('edit');
    const still = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
    expect(still.execution.toolCalls[0]).toMatchObject({ status: 'staged', approvals: [] });
  });
});

describe('bad text in a modal', () => {
  it('a NUL, a lone surrogate or deep nesting in what a modal sends is a 400 that decides nothing', async () => {
    const waiting = await waitingRefund();
    await click(waiting, waiting.adminSlackId, 'edit', buttonsOf(await messageOf(waiting.actionId))[1].value);
    const view = await openedView('edit', waiting.actionId);
    let deep: unknown = 'x';
    for (let level = 0; level < 80; level++) deep = [deep];
    const sent: Array<Record<string, string>> = [
      { 'arg:orderId': 'A-1\u0000', 'arg:amount': '200' },
      { 'arg:orderId': 'A-1', 'arg:amount': '200', why: 'because \ud800' },
      { 'arg:orderId': 'A-1', 'arg:amount': '200', why: deep as string },
    ];
    for (const values of sent) {
      const refused = await submit(waiting, waiting.adminSlackId, view, values);
      expect(refused.status, JSON.stringify(values).slice(0, 80)).toBe(400);
      expect(await refused.json()).toMatchObject({ code: 'invalid_payload', error: expect.stringMatching(/^payload\./) });
    }
    const still = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
    expect(still.execution.toolCalls[0]).toMatchObject({ status: 'staged', approvals: [] });
  });
});

describe('who clicked, when Slack cannot say', () => {
  it('a workspace user Slack shows no email for is told the app lacks users:read.email; the attempt is recorded', async () => {
    const waiting = await waitingRefund();
    const { slack } = slackApprovals.started;
    const hidden = slack.addUser(null);
    await click(waiting, hidden.id, 'approve', buttonsOf(await messageOf(waiting.actionId))[0].value);
    const said = await eventually('an ephemeral answer', async () =>
      slack.callsOf('chat.postEphemeral').find((call) => call.args.user === hidden.id),
    );
    expect(said.args.text).toBe(
      'You may not decide this: Slack shows this app no email for your account (its bot needs the users:read.email scope)',
    );
    const recorded = await eventually('the refusal on the record', async () => {
      const row = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
      return row.execution.toolCalls[0].refusedAttempts[0];
    });
    expect(recorded).toMatchObject({ channel: 'slack', userId: null, externalUserId: hidden.id, reason: said.args.text });
  });

  it('a user Slack does not answer for is told to try again, and nothing is recorded of them', async () => {
    const waiting = await waitingRefund();
    const { slack } = slackApprovals.started;
    await click(waiting, 'U0GONE', 'approve', buttonsOf(await messageOf(waiting.actionId))[0].value);
    const said = await eventually('an ephemeral answer', async () =>
      slack.callsOf('chat.postEphemeral').find((call) => call.args.user === 'U0GONE'),
    );
    expect(said.args.text).toBe('Slack did not say who you are (user_not_found); nothing was decided. Try again.');
    const row = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
    expect(row.execution.toolCalls[0]).toMatchObject({ status: 'staged', refusedAttempts: [], approvals: [] });
  });
});
