import { beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../../lib/logger.ts';
import { captureLog } from '../../../../test/helpers/log-capture.ts';
import { startTestApp, TEST_APP_HOST, type TestApp } from '../../../../test/helpers/test-app.ts';
import { waitForAction } from '../../../../test/helpers/actions.ts';
import { auth } from '../../../../test/helpers/callbacks.ts';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { jobsOfAction } from '../../../../test/helpers/jobs.ts';
import { signIn } from '../../../../test/helpers/factories.ts';
import { type FakeSlack, postInteraction } from '../../../../test/helpers/fake-slack.ts';
import { SIGNING_SECRET, useSlackApprovals, type Waiting } from '../../../../test/helpers/slack-approvals.ts';
import { setupWebhook } from '../../../../test/helpers/webhooks.ts';

const slackApprovals = useSlackApprovals();
const { waitingRefund, twoApprovals, messageOf, buttonsOf, click, submit, refunds, openedView, now } = slackApprovals;
let app: TestApp;
let slack: FakeSlack;
beforeAll(() => ({ app, slack } = slackApprovals.started));

/** Rejects the waiting call as the console does: signed in with its cookie, sending its origin. */
const rejectInConsole = async (waiting: Waiting, reason: string) => {
  const { org, token } = waiting.setup.tenant;
  const rejected = await app.request(
    'POST',
    `/orgs/${org.slug}/actions/${waiting.actionId}/tool-calls/${waiting.toolCallId}/reject`,
    { cookie: token, headers: { origin: TEST_APP_HOST }, body: { reason } },
  );
  return rejected.json();
};
describe('approvals in Slack', () => {
  it('connects an app only with a token Slack accepts, and never shows its secrets', async () => {
    const setup = await setupWebhook(app);
    const { org, token } = setup.tenant;
    const put = (body: unknown) => app.request('PUT', `/orgs/${org.slug}/slack`, { token, body });
    const refused = await put({ botToken: 'xoxb-not-ours', signingSecret: SIGNING_SECRET, channel: 'C0APPROVALS' });
    expect(refused.status).toBe(422);
    expect(await refused.json()).toMatchObject({ code: 'slack_refused', error: 'Slack refused the bot token: invalid_auth' });
    expect((await (await app.request('GET', `/orgs/${org.slug}/slack`, { token })).json()).configured).toBe(false);
    for (const body of [
      {},
      { botToken: slack.token, signingSecret: 'short', channel: 'C0APPROVALS' },
      { botToken: 'x', signingSecret: SIGNING_SECRET, channel: 'a b' },
    ])
      expect((await put(body)).status).toBe(400);
    // Nothing connected: a token left out has nothing to be kept from.
    expect(await (await put({ signingSecret: SIGNING_SECRET, channel: 'C0APPROVALS' })).json()).toEqual({
      error: 'body/botToken: required: no Slack app is connected to keep it from',
      code: 'validation_failed',
    });

    const saved = await put({ botToken: slack.token, signingSecret: SIGNING_SECRET, channel: 'C0APPROVALS' });
    expect(saved.status).toBe(200);
    const shown = await (await app.request('GET', `/orgs/${org.slug}/slack`, { token })).json();
    expect(shown).toMatchObject({
      configured: true,
      channel: 'C0APPROVALS',
      teamId: 'T0ACME',
      botTokenHint: `...${slack.token.slice(-4)}`,
      interactivityUrl: expect.stringMatching(new RegExp(`/webhooks/slack/${org.slug}$`)),
    });
    expect(JSON.stringify(shown)).not.toContain(slack.token);
    expect(JSON.stringify(shown)).not.toContain(SIGNING_SECRET);
    // At rest, encrypted.
    const row = await app.container.db
      .selectFrom('slackIntegrations')
      .selectAll()
      .where('orgId', '=', org.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(slack.token);
    expect(JSON.stringify(row)).not.toContain(SIGNING_SECRET);
    expect(app.container.box.decrypt(row.botToken)).toBe(slack.token);
    // A new channel alone keeps the saved token (checked by auth.test again) and secret.
    const moved = await put({ channel: '#approvals' });
    expect(await moved.json()).toMatchObject({
      channel: '#approvals',
      botTokenHint: `...${slack.token.slice(-4)}`,
      teamId: 'T0ACME',
    });
    const movedRow = await app.container.db
      .selectFrom('slackIntegrations')
      .selectAll()
      .where('orgId', '=', org.id)
      .executeTakeFirstOrThrow();
    expect(app.container.box.decrypt(movedRow.botToken)).toBe(slack.token);
    expect(app.container.box.decrypt(movedRow.signingSecret)).toBe(SIGNING_SECRET);
    await put({ channel: 'C0APPROVALS' });
    const tested = await app.request('POST', `/orgs/${org.slug}/slack/test`, { token });
    expect(await tested.json()).toMatchObject({ ok: true, channel: 'C0APPROVALS', readsHistory: false });
    // With the optional history scope, the test says that cut-off posts are found in the channel.
    slack.grantScopes(['chat:write', 'users:read', 'users:read.email', 'channels:history']);
    try {
      const again = await app.request('POST', `/orgs/${org.slug}/slack/test`, { token });
      expect(await again.json()).toMatchObject({ ok: true, readsHistory: true });
    } finally {
      slack.grantScopes(['chat:write', 'users:read', 'users:read.email', 'channels:read']);
    }
    expect((await app.request('DELETE', `/orgs/${org.slug}/slack`, { token })).status).toBe(204);
    expect((await app.request('DELETE', `/orgs/${org.slug}/slack`, { token })).status).toBe(404);
  });

  it('a change that keeps the saved secrets does not undo a removal or a new secret saved while Slack checked it', async () => {
    const { org, token } = (await setupWebhook(app)).tenant;
    const url = `/orgs/${org.slug}/slack`;
    const put = (body: unknown) => app.request('PUT', url, { token, body });
    const connect = (signingSecret: string) => put({ botToken: slack.token, signingSecret, channel: 'C0APPROVALS' });
    const conflict = {
      code: 'conflict',
      error: 'The Slack app was removed or its secrets replaced while this change was saved: nothing was saved; send it again',
    };
    expect((await connect(SIGNING_SECRET)).status).toBe(200);
    // Removed while the kept token is checked with Slack: the change saves nothing, the app stays removed.
    let hold = slack.holdNextAuthTest();
    const moving = put({ channel: '#approvals' });
    await hold.held;
    expect((await app.request('DELETE', url, { token })).status).toBe(204);
    hold.release();
    expect(await (await moving).json()).toEqual(conflict);
    expect((await (await app.request('GET', url, { token })).json()).configured).toBe(false);
    // A new signing secret saved meanwhile is not put back to the one read before it.
    expect((await connect(SIGNING_SECRET)).status).toBe(200);
    const newSecret = 'f0e1d2c3b4a5968778695a4b3c2d1e0f';
    hold = slack.holdNextAuthTest();
    const movingAgain = put({ channel: '#approvals' });
    await hold.held;
    expect((await connect(newSecret)).status).toBe(200);
    hold.release();
    expect(await (await movingAgain).json()).toEqual(conflict);
    const row = await app.container.db
      .selectFrom('slackIntegrations')
      .selectAll()
      .where('orgId', '=', org.id)
      .executeTakeFirstOrThrow();
    expect([app.container.box.decrypt(row.signingSecret), row.channel]).toEqual([newSecret, 'C0APPROVALS']);
  });

  it('refuses a bot token without the scopes approvals need, when it is saved and when it is tested', async () => {
    const setup = await setupWebhook(app);
    const { org, token } = setup.tenant;
    const put = () =>
      app.request('PUT', `/orgs/${org.slug}/slack`, {
        token,
        body: { botToken: slack.token, signingSecret: SIGNING_SECRET, channel: 'C0APPROVALS' },
      });
    expect((await put()).status).toBe(200);
    const needed = "missing_scope (the bot needs users:read.email: add it to the app's bot token scopes and reinstall the app)";
    try {
      slack.grantScopes(['chat:write', 'users:read']);
      const posts = slack.callsOf('chat.postMessage').length;
      const tested = await app.request('POST', `/orgs/${org.slug}/slack/test`, { token });
      expect(tested.status).toBe(422);
      expect(await tested.json()).toMatchObject({
        code: 'slack_refused',
        error: `The bot token cannot be used for approvals: ${needed}`,
      });
      expect(slack.callsOf('chat.postMessage')).toHaveLength(posts);
      await app.request('DELETE', `/orgs/${org.slug}/slack`, { token });
      const refused = await put();
      expect(refused.status).toBe(422);
      expect((await refused.json()).error).toBe(`The bot token cannot be used for approvals: ${needed}`);
      expect((await (await app.request('GET', `/orgs/${org.slug}/slack`, { token })).json()).configured).toBe(false);
    } finally {
      slack.grantScopes(['chat:write', 'users:read', 'users:read.email']);
    }
  });

  it('posts one message with four buttons; Approve by the approver runs it once and updates the message', async () => {
    const waiting = await waitingRefund();
    const message = await messageOf(waiting.actionId);
    expect(message.channel).toBe('C0APPROVALS');
    expect(buttonsOf(message).map((button: any) => button.action_id)).toEqual(['approve', 'edit', 'send_back', 'reject']);
    const text = JSON.stringify(message.blocks);
    expect(text).toContain('orders__refund_order');
    expect(text).toContain('amount: 250');
    expect(text).toContain(`<@${waiting.adminSlackId}>`);
    const value = buttonsOf(message)[0].value as string;

    const clicked = await click(waiting, waiting.adminSlackId, 'approve', value);
    expect(clicked.status).toBe(200);
    expect(await clicked.text()).toBe('');
    const done = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(refunds(waiting.toolCallId)).toEqual([{ orderId: 'A-1', amount: 250 }]);
    expect(done.execution.toolCalls[0]).toMatchObject({
      approval: 'approved',
      channel: 'slack',
      approverId: waiting.setup.tenant.admin.id,
      approverExternalId: waiting.adminSlackId,
      notifications: [expect.objectContaining({ channel: 'slack', status: 'sent', address: 'C0APPROVALS' })],
    });
    // The message says who decided, and has no buttons left.
    await eventually('the message updated', async () => buttonsOf(message).length === 0 || undefined);
    expect(JSON.stringify(message.blocks)).toContain(`Approved by ${waiting.setup.tenant.admin.email} in Slack`);
    // Posted and rebuilt, the message asked Slack who the approver is once (users.lookupByEmail is rate-limited).
    const lookups = slack.callsOf('users.lookupByEmail').filter((call) => call.args.email === waiting.setup.tenant.admin.email);
    expect(lookups).toHaveLength(1);
    // A second click on the decided call changes nothing and says who decided.
    await click(waiting, waiting.adminSlackId, 'approve', value);
    await eventually('an ephemeral answer', async () =>
      slack
        .callsOf('chat.postEphemeral')
        .find((call) => String(call.args.text).includes(`Approved by ${waiting.setup.tenant.admin.email} in Slack`)),
    );
    expect(refunds(waiting.toolCallId)).toHaveLength(1);
  });

  it('Edit opens a modal with the arguments; invalid edits stay in it; the edited arguments run', async () => {
    const waiting = await waitingRefund();
    const value = buttonsOf(await messageOf(waiting.actionId))[1].value as string;
    await click(waiting, waiting.adminSlackId, 'edit', value);
    const view = await openedView('edit', waiting.actionId);
    expect(view.callback_id).toBe('edit');
    const fields = view.blocks.filter((block: any) => block.type === 'input');
    expect(Object.fromEntries(fields.map((block: any) => [block.block_id, block.element.initial_value]))).toEqual({
      'arg:orderId': 'A-1',
      'arg:amount': '250',
    });
    const invalid = await submit(waiting, waiting.adminSlackId, view, { 'arg:orderId': 'A-1', 'arg:amount': 'lots' });
    expect(await invalid.json()).toEqual({ response_action: 'errors', errors: { 'arg:amount': 'a number' } });
    const valid = await submit(waiting, waiting.adminSlackId, view, { 'arg:orderId': 'A-1', 'arg:amount': '200' });
    expect(valid.status).toBe(200);
    expect(await valid.text()).toBe('');
    const done = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(refunds(waiting.toolCallId)).toEqual([{ orderId: 'A-1', amount: 200 }]);
    expect(done.execution.toolCalls[0]).toMatchObject({ approvedInput: { orderId: 'A-1', amount: 200 }, channel: 'slack' });
  });

  it('Send back through its modal lets the agent go on; Reject through its modal ends the action', async () => {
    const sentBack = await waitingRefund();
    const [, , sendBack] = buttonsOf(await messageOf(sentBack.actionId));
    await click(sentBack, sentBack.adminSlackId, 'send_back', sendBack.value);
    const view = await openedView('send_back', sentBack.actionId);
    expect(await (await submit(sentBack, sentBack.adminSlackId, view, { words: '' })).json()).toMatchObject({
      response_action: 'errors',
    });
    await submit(sentBack, sentBack.adminSlackId, view, { words: 'Refund 200, not 250.' });
    const done = await waitForAction(app, auth(sentBack.setup), sentBack.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(refunds(sentBack.toolCallId)).toEqual([]);
    expect(done.execution.toolCalls[0]).toMatchObject({ approval: 'sent_back', reason: 'Refund 200, not 250.' });

    const rejected = await waitingRefund();
    const reject = buttonsOf(await messageOf(rejected.actionId))[3];
    await click(rejected, rejected.adminSlackId, 'reject', reject.value);
    const rejectView = await openedView('reject', rejected.actionId);
    await submit(rejected, rejected.adminSlackId, rejectView, { words: 'Not this customer.' });
    const ended = await waitForAction(app, auth(rejected.setup), rejected.actionId, ['rejected', 'completed']);
    expect(ended.status).toBe('rejected');
    expect(refunds(rejected.toolCallId)).toEqual([]);
  });

  it('a workspace user who is not an approver decides nothing, is told so, and the attempt is recorded', async () => {
    const waiting = await waitingRefund();
    const stranger = slack.addUser('someone@elsewhere.test');
    const value = buttonsOf(await messageOf(waiting.actionId))[0].value as string;
    expect((await click(waiting, stranger.id, 'approve', value)).status).toBe(200);
    await eventually('the ephemeral refusal', async () =>
      slack.callsOf('chat.postEphemeral').find((call) => call.args.user === stranger.id),
    );
    const ledger = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
    const recorded = await eventually('the refusal on the record', async () => {
      const row = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
      return row.execution.toolCalls[0].refusedAttempts.length > 0 ? row : undefined;
    });
    expect(recorded.execution.toolCalls[0].refusedAttempts).toEqual([
      expect.objectContaining({ channel: 'slack', userId: null, externalUserId: stranger.id }),
    ]);
    expect(ledger.execution.toolCalls[0].status).toBe('staged');
    expect(refunds(waiting.toolCallId)).toEqual([]);
  });

  it('a bad signature, a stale timestamp and a replayed interaction decide nothing (401)', async () => {
    const waiting = await waitingRefund();
    const value = buttonsOf(await messageOf(waiting.actionId))[0].value as string;
    const payload = {
      type: 'block_actions',
      user: { id: waiting.adminSlackId },
      trigger_id: 't',
      channel: { id: 'C0APPROVALS' },
      actions: [{ action_id: 'approve', value }],
    };
    const bad = await postInteraction(waiting.url, 'wrong-secret', payload, { timestamp: now() });
    expect(bad.status).toBe(401);
    expect((await bad.json()).code).toBe('signature_invalid');
    const stale = await postInteraction(waiting.url, SIGNING_SECRET, payload, { timestamp: now() - 301 });
    expect((await stale.json()).code).toBe('timestamp_out_of_tolerance');
    const unsigned = await fetch(waiting.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'payload={}',
    });
    expect(unsigned.status).toBe(401);
    // The same signed request twice: the second is a replay.
    const timestamp = now();
    const rejectPayload = { ...payload, actions: [{ action_id: 'send_back', value }] };
    expect((await postInteraction(waiting.url, SIGNING_SECRET, rejectPayload, { timestamp })).status).toBe(200);
    const replayed = await postInteraction(waiting.url, SIGNING_SECRET, rejectPayload, { timestamp });
    expect((await replayed.json()).code).toBe('message_replayed');
    const row = await waitForAction(app, auth(waiting.setup), waiting.actionId, ['pending_approval']);
    expect(row.execution.toolCalls[0].status).toBe('staged');
  });

  it('a decision in the console updates the Slack message', async () => {
    const waiting = await waitingRefund();
    const message = await messageOf(waiting.actionId);
    expect(await rejectInConsole(waiting, 'Wrong order')).toMatchObject({ status: 'rejected', channel: 'console' });
    await eventually('the message updated', async () => buttonsOf(message).length === 0 || undefined);
    expect(JSON.stringify(message.blocks)).toContain(`Rejected by ${waiting.setup.tenant.admin.email} in the console`);
    expect(JSON.stringify(message.blocks)).toContain('Wrong order');
  });

  it('a decision made while the message is being posted updates it once it is posted', async () => {
    const posting = slack.holdNextPost();
    const waiting = await waitingRefund();
    await posting.held; // in the channel, with its buttons; the service has not heard back yet
    const message = await messageOf(waiting.actionId);
    expect(buttonsOf(message)).toHaveLength(4);
    const rejected = await rejectInConsole(waiting, 'Too late for the message');
    expect(rejected).toMatchObject({ status: 'rejected', channel: 'console' });
    posting.release();
    await eventually('the message updated', async () => buttonsOf(message).length === 0 || undefined);
    expect(JSON.stringify(message.blocks)).toContain('Too late for the message');
  });

  it('a message posted with nothing decided meanwhile is not updated', async () => {
    const waiting = await waitingRefund();
    const message = await messageOf(waiting.actionId);
    // Its job compares the message with the record after posting it, and asks for an update when they differ.
    const jobsOf = (name: string) => jobsOfAction(app.container.db, name, waiting.actionId);
    await eventually(
      'the notification job to complete',
      async () => (await jobsOf('approvals.notify'))[0]?.state === 'completed' || undefined,
    );
    expect(await jobsOf('approvals.slack-update')).toEqual([]);
    expect(slack.callsOf('chat.update').filter((call) => call.args.ts === message.ts)).toEqual([]);
  });

  it('bad input on the interaction route is a 4xx, never a 500', async () => {
    const waiting = await waitingRefund();
    const signed = (body: string) => postInteraction(waiting.url, SIGNING_SECRET, null, { timestamp: now(), body });
    const json = await fetch(waiting.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(json.status).toBe(415);
    expect((await signed('nothing=here')).status).toBe(400);
    expect((await signed('payload=%7Bnot%20json')).status).toBe(400);
    const unknown = new URLSearchParams({
      payload: JSON.stringify({ type: 'block_actions', user: { id: 'U1' }, trigger_id: 't', actions: [{ action_id: 'delete' }] }),
    });
    expect((await signed(unknown.toString())).status).toBe(400);
    const otherType = new URLSearchParams({ payload: JSON.stringify({ type: 'shortcut', user: { id: 'U1' } }) });
    expect((await signed(otherType.toString())).status).toBe(400);
    expect((await signed(`payload=${'x'.repeat(300 * 1024)}`)).status).toBe(413);
    expect((await signed('payload=%00%ED%A0%80')).status).toBe(400);
    const noOrg = await postInteraction(`${app.baseUrl}/webhooks/slack/no-such-org`, SIGNING_SECRET, {}, { timestamp: now() });
    expect(noOrg.status).toBe(404);
  });

  it('with minApprovals 2, a Slack approval counts as one: the message says "1 of 2 approvals" and keeps its buttons', async () => {
    const waiting = await waitingRefund();
    const { org } = waiting.setup.tenant;
    const { second, rule } = await twoApprovals(waiting);
    // A PATCH changes what it names only: the rule still posts in Slack.
    expect(rule).toMatchObject({ minApprovals: 2, notify: ['slack'] });
    const message = await messageOf(waiting.actionId);
    await click(waiting, waiting.adminSlackId, 'approve', buttonsOf(message)[0].value);
    await eventually(
      'the message counting one approval',
      async () => JSON.stringify(message.blocks).includes(`1 of 2 approvals: <@${waiting.adminSlackId}>`) || undefined,
    );
    expect(buttonsOf(message)).toHaveLength(4);
    expect(refunds(waiting.toolCallId)).toEqual([]);
    // The second approver, in the console (the API): the call runs, the message says so.
    const approved = await app.request(
      'POST',
      `/orgs/${org.slug}/actions/${waiting.actionId}/tool-calls/${waiting.toolCallId}/approve`,
      { token: await signIn(app, second), body: {} },
    );
    expect(await approved.json()).toMatchObject({ status: 'approved' });
    await eventually('the message updated', async () => buttonsOf(message).length === 0 || undefined);
    expect(JSON.stringify(message.blocks)).toContain(`Approved by ${second.email} through the API`);
    await waitForAction(app, auth(waiting.setup), waiting.actionId, ['completed']);
    expect(refunds(waiting.toolCallId)).toHaveLength(1);
  });

  it('keeps the bot token and the signing secret out of its logs, even at debug', async () => {
    const log = captureLog(loggerOptions('debug'));
    const logged = await startTestApp({ SLACK_API_URL: slack.url }, { logger: log.logger });
    try {
      const setup = await setupWebhook(logged);
      const { org, token } = setup.tenant;
      for (const botToken of ['xoxb-refused-token-1234', slack.token])
        await logged.request('PUT', `/orgs/${org.slug}/slack`, {
          token,
          body: { botToken, signingSecret: SIGNING_SECRET, channel: 'C0APPROVALS' },
        });
      await logged.request('POST', `/orgs/${org.slug}/slack/test`, { token });
      await postInteraction(
        `${logged.baseUrl}/webhooks/slack/${org.slug}`,
        SIGNING_SECRET,
        { type: 'shortcut' },
        {
          timestamp: Math.floor(logged.clock.now().getTime() / 1000),
        },
      );
      expect(log.text()).toContain('/webhooks/slack/');
      for (const secret of [slack.token, 'xoxb-refused-token-1234', SIGNING_SECRET]) expect(log.text()).not.toContain(secret);
    } finally {
      await logged.close();
    }
  });
});
