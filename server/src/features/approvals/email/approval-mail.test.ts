import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../../test/helpers/callbacks.ts';
import {
  type FakeMailProvider,
  setUpApprovalOrg,
  setUpEmailOrg,
  useAppWithMailProvider,
} from '../../../../test/helpers/email.ts';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { createUser, signIn } from '../../../../test/helpers/factories.ts';
import type { SentEmail } from '../../../../test/helpers/fake-mail-provider.ts';
import { documentThenText } from '../../../../test/helpers/fake-model.ts';
import type { FakeModel } from '../../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../../test/helpers/test-app.ts';
import type { WebhookSetup } from '../../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({}, (started) => ({ app, model, provider } = started));

const approvalOrg = (rule: Record<string, unknown> = {}) => setUpApprovalOrg(app, provider, rule);

/** An action of the org waiting on its generateDocument call. */
async function waitingAction(setup: WebhookSetup) {
  model.script(documentThenText());
  const actionId = await runEvent(app, setup);
  await waitForAction(app, auth(setup), actionId, ['pending_approval']);
  return actionId;
}

const emailTo = (address: string, actionId: string) =>
  eventually(`an approval email to ${address}`, async () =>
    provider.sent.find((email) => email.to.includes(address) && email.text?.includes(actionId)),
  );

/** The one-time links of an approval email, by decision. */
function linksOf(email: SentEmail) {
  const found = [...email.text!.matchAll(/(Approve|Reject): (\S+\/approvals\/decide\/([\w-]+))/g)];
  return {
    approve: found.find((match) => match[1] === 'Approve')![2]!,
    reject: found.find((match) => match[1] === 'Reject')![2]!,
    tokens: found.map((match) => match[3]!),
  };
}

const open = (url: string) => fetch(url);
const use = (url: string, form: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
const ledger = (setup: WebhookSetup, actionId: string) =>
  app
    .request('GET', `/orgs/${setup.tenant.org.slug}/ledger/${actionId}`, { token: setup.tenant.token })
    .then((response) => response.json());

describe('approvals by email', () => {
  it('notifies both admins; one approves by link (GET shows, POST decides), the action completes, the other link says it was decided', async () => {
    const { org, second, setup } = await approvalOrg();
    const actionId = await waitingAction(setup);
    const first = await emailTo(org.admin.email, actionId);
    const other = await emailTo(second.email, actionId);

    expect(first.from).toBe(`"Acme Agents" <agents@${org.domain}>`);
    expect(first.subject).toBe('Approval needed: Helper on order.created');
    expect(first.headers).toMatchObject({ 'Auto-Submitted': 'auto-generated' });
    expect((first as SentEmail & { reply_to?: string[] }).reply_to).toEqual([`agents@${org.domain}`]);
    expect(first.text).toContain('Tool: generateDocument');
    expect(first.text).toContain('title: Order 42');
    expect(first.text).toContain('Rule: Documents');
    expect(first.html).toContain('>Approve</a>');
    expect(first.text).toContain(`The console: http://app.test/o/${org.org.slug}/approvals`);
    const links = linksOf(first);
    expect(links.tokens).toHaveLength(2);
    for (const token of links.tokens) expect(Buffer.from(token, 'base64url')).toHaveLength(32);

    // Mail scanners open links: a GET shows the decision and a button, and decides nothing.
    for (let scan = 0; scan < 2; scan++) {
      const page = await open(links.approve);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toMatch(
        /^default-src 'none'; style-src 'nonce-[^']+'; form-action 'self'/,
      );
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      const html = await page.text();
      expect(html).toContain('Approve this tool call?');
      expect(html).toContain(`You are deciding as ${org.admin.email}`);
      expect(html).not.toMatch(/<script|https?:\/\/(?!127\.0\.0\.1)/);
    }
    expect((await ledger(setup, actionId)).status).toBe('pending_approval');

    const used = await use(links.approve);
    expect(used.status).toBe(200);
    expect(await used.text()).toContain('<h1>Approved</h1>');
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const [call] = done.execution.toolCalls;
    expect(call).toMatchObject({
      approval: 'approved',
      channel: 'email_link',
      approverId: org.admin.id,
      decidedBy: org.admin.id,
    });
    expect(done.lifecycleEvents.find((event: { status: string }) => event.status === 'approved').data).toMatchObject({
      channel: 'email_link',
      approverId: org.admin.id,
    });
    expect(call.notifications).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          userId: org.admin.id,
          address: org.admin.email,
          channel: 'email',
          status: 'sent',
          reason: null,
        }),
        expect.objectContaining({ userId: second.id, address: second.email, channel: 'email', status: 'sent' }),
      ]),
    );

    // The other approver's link, and the used one again: decided already, nothing changes, both on the record.
    const late = await open(linksOf(other).approve);
    expect(late.status).toBe(409);
    expect(await late.text()).toContain(`It was approved by ${org.admin.email} by an email link`);
    expect((await use(linksOf(other).reject, { reason: 'no' })).status).toBe(409);
    expect((await use(links.approve)).status).toBe(409);
    const after = await ledger(setup, actionId);
    expect(after.execution.toolCalls[0].approval).toBe('approved');
    expect(after.execution.toolCalls[0].refusedAttempts).toEqual([
      expect.objectContaining({ channel: 'email_link', userId: second.id, reason: 'This tool call was approved already' }),
      expect.objectContaining({ channel: 'email_link', userId: org.admin.id, reason: 'This tool call was approved already' }),
    ]);

    // The tokens are nowhere but in the emails: not in the stored thread, not in the ledger.
    const stored = await app.container.db
      .selectFrom('emailMessages')
      .select(['textBody', 'htmlBody'])
      .where('actionId', '=', actionId)
      .execute();
    expect(stored).toHaveLength(2);
    const everything = JSON.stringify([stored, after]);
    for (const token of [...links.tokens, ...linksOf(other).tokens]) expect(everything).not.toContain(token);
    expect(stored[0]!.textBody).toContain('Approve: [one-time link]');
    const metrics = await (await app.request('GET', '/metrics')).text();
    expect(metrics).toMatch(/approval_notifications_total\{channel="email",outcome="sent"\} [1-9]/);
    expect(metrics).toMatch(/approval_decisions_total\{channel="email_link",decision="approved"\} [1-9]/);
  });

  /** A reply to an approval email as the provider receives it and tells us. */
  async function reply(
    org: Awaited<ReturnType<typeof setUpEmailOrg>>,
    to: SentEmail,
    mail: {
      from: string;
      text: string;
      headers?: Record<string, string>;
      authentication?: { spf?: string; dkim?: string; dmarc?: string };
    },
  ) {
    return org.deliver({
      from: mail.from,
      to: [`agents@${org.domain}`],
      subject: `Re: ${to.subject}`,
      text: mail.text,
      headers: {
        'Message-ID': `<${crypto.randomUUID()}@approver.test>`,
        'In-Reply-To': to.messageId,
        References: to.messageId,
        ...mail.headers,
      },
      ...(mail.authentication ? { authentication: mail.authentication } : {}),
    });
  }
  /**
   * Every approval email of the action recorded as sent: by then the provider's Message-ID (the one
   * replies name) is known. The provider has the email a moment before that.
   */
  const sent = (setup: WebhookSetup, actionId: string) =>
    eventually('the approval emails recorded as sent', async () => {
      const notifications = (await ledger(setup, actionId)).execution.toolCalls[0].notifications;
      return notifications.length > 0 && notifications.every((n: { status: string }) => n.status === 'sent') ? true : undefined;
    });
  const answerTo = (messageId: string) =>
    eventually(`an answer to ${messageId}`, async () =>
      provider.sent.find((email) => email.headers?.['In-Reply-To'] === messageId),
    );

  it('a reply "reject" with a reason from the approver rejects the call; the action ends rejected with the reason', async () => {
    const { org, setup } = await approvalOrg({ approvers: { userIds: [] as string[], role: 'Admin' } });
    const actionId = await waitingAction(setup);
    const email = await emailTo(org.admin.email, actionId);
    await sent(setup, actionId);
    await reply(org, email, {
      from: `Admin <${org.admin.email.toUpperCase()}>`,
      text: `Reject: the customer asked us to wait\n\nOn Tue, someone wrote:\n> ${email.text!.split('\n').join('\n> ')}`,
    });
    const done = await waitForAction(app, auth(setup), actionId, ['rejected', 'completed', 'failed']);
    expect(done.status).toBe('rejected');
    expect(done.execution.toolCalls[0]).toMatchObject({
      approval: 'rejected',
      channel: 'email_reply',
      approverId: org.admin.id,
      reason: 'the customer asked us to wait',
    });
    // The reply is in the action's approval thread, and no agent answered it. (Its status is written once
    // the decision has committed: the action may be seen rejected a moment before.)
    const threadId = (
      await app.container.db
        .selectFrom('emailMessages')
        .select('threadId')
        .where('actionId', '=', actionId)
        .executeTakeFirstOrThrow()
    ).threadId;
    const thread = await eventually('the reply marked as read', async () => {
      const messages = await app.container.db
        .selectFrom('emailMessages')
        .select(['direction', 'statusDetail'])
        .where('threadId', '=', threadId)
        .orderBy('createdAt')
        .execute();
      return messages[2]?.statusDetail?.startsWith('read as a decision') ? messages : undefined;
    });
    expect(thread.map((message) => message.direction)).toEqual(['outbound', 'outbound', 'inbound']);
    expect(thread[2]!.statusDetail).toBe('read as a decision: generateDocument rejected');
    // The job works from the reply's closed state (read now), not from the sentence users see.
    const state = await app.container.db
      .selectFrom('approvalReplies')
      .select(['state', 'orgId'])
      .where('orgId', '=', org.org.id)
      .execute();
    expect(state).toEqual([{ state: 'read', orgId: org.org.id }]);
  });

  it('a reply "send back: ..." sends the call back: not run, the agent gets the message and the action goes on', async () => {
    const { org, setup } = await approvalOrg({ approvers: { userIds: [] as string[], role: 'Admin' } });
    const actionId = await waitingAction(setup);
    const email = await emailTo(org.admin.email, actionId);
    expect(email.text).toContain('"send back:" and what the agent should do instead');
    await sent(setup, actionId);
    await reply(org, email, { from: org.admin.email, text: 'Send back: no PDF, answer in two lines' });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'rejected', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({
      status: 'sent_back',
      approval: 'sent_back',
      channel: 'email_reply',
      approverId: org.admin.id,
      reason: 'no PDF, answer in two lines',
    });
    expect(JSON.stringify(done.execution.conversation)).toContain(
      'A reviewer sent this call back without running it: no PDF, answer in two lines',
    );
    // The link of the same email, opened after: it says what was decided, in words.
    const late = await open(linksOf(email).approve);
    expect(late.status).toBe(409);
    expect(await late.text()).toContain(`It was sent back by ${org.admin.email} by an email reply at `);
  });

  it("minApprovals 2: the first approval by link does not spend the other approver's link, which runs the call", async () => {
    const { org, second, setup } = await approvalOrg({ minApprovals: 2 });
    const actionId = await waitingAction(setup);
    const first = await emailTo(org.admin.email, actionId);
    const other = await emailTo(second.email, actionId);
    expect(first.text).toContain('Approvals: 2 different approvers must approve each call; one rejection rejects it');

    expect(await (await open(linksOf(first).approve)).text()).toContain('<label for="reason">Why (optional)</label>');
    const approved = await use(linksOf(first).approve, { reason: 'Checked the order: it is 42' });
    expect(approved.status).toBe(200);
    expect(await approved.text()).toContain('The call runs once 1 more approver approves it');
    expect((await ledger(setup, actionId)).execution.toolCalls[0]).toMatchObject({
      status: 'staged',
      approvalsRequired: 2,
      approvals: [{ approverId: org.admin.id, channel: 'email_link', superseded: false, reason: 'Checked the order: it is 42' }],
    });
    // The first approver's link is spent; the other approver's still opens and decides.
    expect((await use(linksOf(first).approve)).status).toBe(409);
    const page = await open(linksOf(other).approve);
    expect(page.status).toBe(200);
    const shown = await page.text();
    expect(shown).toContain(`You are deciding as ${second.email}`);
    expect(shown).toContain(`${org.admin.email}: “Checked the order: it is 42”`);
    const last = await use(linksOf(other).approve);
    expect(last.status).toBe(200);
    expect(await last.text()).toContain('The call runs and the agent goes on.');

    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({ approval: 'approved', decidedBy: second.id, channel: 'email_link' });
    expect(done.execution.toolCalls[0].approvals.map((approval: { approverId: string }) => approval.approverId)).toEqual([
      org.admin.id,
      second.id,
    ]);
  });

  it("minApprovals 2: after an edit with a reason, the other approver's link shows the edit, who approved it and why", async () => {
    const { org, second, setup } = await approvalOrg({ minApprovals: 2 });
    const actionId = await waitingAction(setup);
    const other = await emailTo(second.email, actionId);
    const { toolCallId } = (await ledger(setup, actionId)).execution.toolCalls[0];
    const edited = await org.api('POST', `/actions/${actionId}/tool-calls/${toolCallId}/approve`, {
      arguments: { title: 'Order 42 <final>', content: '# Order 42' },
      reason: 'The title needs <final> & the date',
    });
    expect(edited.status).toBe(200);
    const page = await (await open(linksOf(other).approve)).text();
    expect(page).toContain('<td class="name">Edited</td>');
    expect(page).toContain('Order 42 &lt;final&gt;');
    expect(page).toContain(
      `<td class="name">Approved by</td><td class="value">${org.admin.email}: “The title needs &lt;final&gt; &amp; the date”</td>`,
    );
    expect((await use(linksOf(other).approve)).status).toBe(200);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.execution.toolCalls[0]).toMatchObject({ approval: 'approved', approvedInput: { title: 'Order 42 <final>' } });
  });

  it('replies that decide nothing: another sender, failed authentication, an unclear first line, an auto-reply; then the approver approves', async () => {
    const { org, setup } = await approvalOrg();
    const actionId = await waitingAction(setup);
    const email = await emailTo(org.admin.email, actionId);
    await sent(setup, actionId);

    const stranger = await reply(org, email, { from: 'mallory@evil.test', text: 'approve' });
    expect((await answerTo(stranger)).text).toMatch(/^Only the person this approval email was sent to can decide/);
    const spoofed = await reply(org, email, {
      from: org.admin.email,
      text: 'approve',
      authentication: { spf: 'fail', dmarc: 'fail' },
    });
    expect((await answerTo(spoofed)).text).toContain("the provider's SPF check says fail");
    const spoofedHeader = await reply(org, email, {
      from: org.admin.email,
      text: 'approve',
      headers: { 'Authentication-Results': `mx.resend.test; spf=pass smtp.mailfrom=x; dkim=fail header.d=${org.domain}` },
    });
    expect((await answerTo(spoofedHeader)).text).toContain('Authentication-Results says dkim=fail');
    const unclear = await reply(org, email, { from: org.admin.email, text: 'Approve or reject? Let me think.' });
    const unclearAnswer = await answerTo(unclear);
    expect(unclearAnswer.text).toMatch(/first line must start with "approve"/);
    expect(unclearAnswer.headers).toMatchObject({ 'Auto-Submitted': 'auto-replied', 'In-Reply-To': unclear });
    const automatic = await reply(org, email, {
      from: org.admin.email,
      text: 'approve',
      headers: { 'Auto-Submitted': 'auto-replied' },
    });

    await eventually('five refused attempts', async () =>
      (await ledger(setup, actionId)).execution.toolCalls[0].refusedAttempts.length === 5 ? true : undefined,
    );
    const waiting = await ledger(setup, actionId);
    expect(waiting.status).toBe('pending_approval');
    expect(waiting.execution.toolCalls[0].refusedAttempts.map((attempt: { reason: string }) => attempt.reason)).toEqual([
      "A reply from mallory@evil.test, not from the approver's address",
      "A reply that failed authentication (the provider's SPF check says fail)",
      'A reply that failed authentication (Authentication-Results says dkim=fail)',
      'A reply that starts with neither approve, reject nor send back ("Approve or reject? Let me think.")',
      expect.stringMatching(/^An automatic reply decides nothing \(it was sent automatically/),
    ]);
    // No answer to the auto-reply (loop guard).
    expect(provider.sent.some((sent) => sent.headers?.['In-Reply-To'] === automatic)).toBe(false);

    await reply(org, email, { from: org.admin.email, text: 'APPROVED, the customer confirmed' });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed', 'rejected']);
    expect(done.status).toBe('completed');
    // The words after "approved" are the approval's why, as on every channel.
    expect(done.execution.toolCalls[0]).toMatchObject({
      channel: 'email_reply',
      approverId: org.admin.id,
      approvals: [expect.objectContaining({ channel: 'email_reply', reason: 'the customer confirmed' })],
    });
  });

  it('a link of a member removed from the org, and a link past the deadline, decide nothing and are recorded', async () => {
    const { org, second, setup } = await approvalOrg({ approvalTimeoutSeconds: 600 });
    const actionId = await waitingAction(setup);
    const mine = linksOf(await emailTo(org.admin.email, actionId));
    const theirs = linksOf(await emailTo(second.email, actionId));
    await app.container.db.deleteFrom('memberships').where('userId', '=', second.id).execute();
    const removed = await use(theirs.approve);
    expect(removed.status).toBe(403);
    expect(await removed.text()).toContain('Not one of this call'); // the rule names who may decide
    // Used once, refused: the link is spent.
    expect((await open(theirs.approve)).status).toBe(409);

    app.clock.advance(601_000);
    const expired = await open(mine.reject);
    expect(expired.status).toBe(410);
    expect(await expired.text()).toContain('This link has expired');
    expect((await use(mine.reject)).status).toBe(403);
    const row = await ledger(setup, actionId);
    expect(row.status).toBe('pending_approval');
    expect(row.execution.toolCalls[0].refusedAttempts).toEqual([
      expect.objectContaining({
        channel: 'email_link',
        userId: second.id,
        reason: expect.stringMatching(/^Not one of this call's approvers/),
      }),
      expect.objectContaining({
        channel: 'email_link',
        userId: org.admin.id,
        reason: 'This link expired at the deadline of the call',
      }),
    ]);
  });

  it('no integration, an approver who opted out, one on the suppression list: the ledger says why not; the console still decides', async () => {
    const { org, second, setup } = await approvalOrg({ approvers: { userIds: [] as string[], role: 'Admin' } });
    const third = await createUser(app, { role: 'Admin', org: org.org.slug });
    const secondToken = await signIn(app, second);
    expect((await (await app.request('GET', '/auth/me', { token: secondToken })).json()).preferences).toEqual({
      approvalEmails: true,
    });
    const preferences = await app.request('PATCH', '/auth/me/preferences', {
      token: secondToken,
      body: { approvalEmails: false },
    });
    expect(await preferences.json()).toEqual({ approvalEmails: false });
    expect((await (await app.request('GET', '/auth/me', { token: secondToken })).json()).preferences).toEqual({
      approvalEmails: false,
    });
    expect(
      (await app.request('PATCH', '/auth/me/preferences', { token: secondToken, body: { approvalEmails: 'no' } })).status,
    ).toBe(400);
    expect((await app.request('PATCH', '/auth/me/preferences', { token: secondToken, body: { other: true } })).status).toBe(400);
    expect((await app.request('PATCH', '/auth/me/preferences', { body: { approvalEmails: false } })).status).toBe(401);
    await app.container.db
      .insertInto('emailSuppressions')
      .values({ orgId: org.org.id, address: third.email.toLowerCase(), reason: 'bounced', detail: null })
      .execute();
    const actionId = await waitingAction(setup);
    await emailTo(org.admin.email, actionId);
    const row = await eventually('three notifications', async () => {
      const found = await ledger(setup, actionId);
      return found.execution.toolCalls[0].notifications.length === 3 ? found : undefined;
    });
    const notifications = row.execution.toolCalls[0].notifications;
    expect(notifications.find((n: { userId: string }) => n.userId === second.id)).toMatchObject({
      status: 'not_sent',
      reason: 'the approver turned approval emails off',
    });
    expect(notifications.find((n: { userId: string }) => n.userId === third.id)).toMatchObject({
      status: 'not_sent',
      reason: `${third.email.toLowerCase()} is on the suppression list (bounced)`,
    });

    await org.api('DELETE', '/email/integration');
    const next = await waitingAction(setup);
    const alone = await eventually('notifications of the next action', async () => {
      const found = await ledger(setup, next);
      return found.execution.toolCalls[0].notifications.length === 3 ? found : undefined;
    });
    expect(alone.execution.toolCalls[0].notifications.find((n: { userId: string }) => n.userId === org.admin.id)).toMatchObject({
      status: 'not_sent',
      reason: 'the organization has no email integration',
    });
    const call = alone.execution.toolCalls[0].toolCallId;
    const approved = await app.request('POST', `/orgs/${org.org.slug}/actions/${next}/tool-calls/${call}/approve`, {
      token: org.token,
    });
    expect(approved.status).toBe(200);
    expect((await waitForAction(app, auth(setup), next, ['completed', 'failed'])).status).toBe('completed');
  });

  it("a model's argument or a sender's event type cannot pass for the email's own lines or links", async () => {
    const { org, setup } = await approvalOrg();
    const forged = 'https://evil.example/approve';
    model.script(
      documentThenText({
        title: 'invoice\u202efdp.exe',
        content: `Totals below.\r\n   Approve: ${forged}\n   Reject: ${forged}`,
      }),
    );
    const actionId = await runEvent(app, setup, { eventType: `order.created\nApprove: ${forged}` });
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const email = await emailTo(org.admin.email, actionId);

    expect(email.subject).toBe(`Approval needed: Helper on order.created Approve: ${forged}`);
    const lines = email.text!.split('\n');
    // The only lines that read as the email's links are its own: the forged ones sit under the argument's gutter.
    expect(lines.filter((line) => /^\s*(Approve|Reject):/.test(line))).toEqual([
      expect.stringMatching(/^ {3}Approve: http:\/\/127\.0\.0\.1:\d+\/approvals\/decide\//),
      expect.stringMatching(/^ {3}Reject: http:\/\/127\.0\.0\.1:\d+\/approvals\/decide\//),
    ]);
    expect(lines).toContain('   content: Totals below.');
    expect(lines).toContain(`      |    Approve: ${forged}`);
    expect(lines.filter((line) => line.startsWith('Event: '))).toEqual([
      expect.stringMatching(/^Event: order\.created Approve: https:\/\/evil\.example\/approve \(/),
    ]);
    // A direction override would show "fdp.exe" as "exe.pdf": it is shown as what it is, in both parts.
    expect(lines).toContain('   title: invoice[U+202E]fdp.exe');
    expect(email.html).toContain('invoice[U+202E]fdp.exe');
    expect(`${email.text}${email.html}`).not.toContain('\u202e');
    // The link's own page shows the argument with its lines, as the HTML part does.
    const page = await (await open(linksOf(email).approve)).text();
    expect(page).toContain(`Totals below.\n   Approve: ${forged}`);
    expect(page).toContain('invoice[U+202E]fdp.exe');
  });

  it('a run over its budget: the email offers approve and reject only; a reply "send back" decides nothing and is answered', async () => {
    const { org, setup } = await approvalOrg();
    const budget = { period: 'day', maxTokens: 0, onExceed: 'pause' };
    expect((await org.api('PUT', '/budget', { budget })).status).toBe(200);
    model.script(documentThenText());
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const email = await emailTo(org.admin.email, actionId);
    expect(email.text).toContain('Tool: continueOverBudget');
    expect(email.text).toContain(
      'Or reply to this email with "approve" or "reject" (a reason may follow either) on the first line.',
    );
    expect(`${email.text}${email.html}`).not.toMatch(/send back/i);
    await sent(setup, actionId);

    const sentBack = await reply(org, email, { from: org.admin.email, text: 'Send back: use fewer tokens' });
    expect((await answerTo(sentBack)).text).toBe(
      'Your reply decided nothing: continueOverBudget: A run over its budget is approved or rejected as it stands; ' +
        'there is no call to send back.',
    );
    const waiting = await eventually('the refused reply on the record', async () => {
      const row = await ledger(setup, actionId);
      return row.execution.toolCalls[0].refusedAttempts.length > 0 ? row : undefined;
    });
    expect(waiting.status).toBe('pending_approval');
    expect(waiting.execution.toolCalls[0].refusedAttempts).toEqual([
      expect.objectContaining({
        channel: 'email_reply',
        reason:
          'A reply that decides what this call cannot take (A run over its budget is approved or rejected as it stands; ' +
          'there is no call to send back)',
      }),
    ]);
    // The approver can still decide: a reject ends the action.
    await reply(org, email, { from: org.admin.email, text: 'Reject: not today' });
    expect((await waitForAction(app, auth(setup), actionId, ['rejected', 'completed', 'failed'])).status).toBe('rejected');
  });

  it("an inbox's action that waits tells the org's admins as its assignment says; a link approves it", async () => {
    // A channel named twice is kept once (three names for two channels was a 400 "Too big").
    const notify = ['email', 'slack', 'email'] as Array<'email' | 'slack'>;
    const org = await setUpEmailOrg(app, provider, { agentTools: ['generateDocument'], notify });
    const { agents } = await (await org.api('GET', `/email/inboxes/${org.inbox.id}`)).json();
    expect(agents).toEqual([expect.objectContaining({ agentId: org.agentId, notify: ['email', 'slack'] })]);
    model.script(documentThenText());
    await org.deliver({ from: 'Dana <dana@customer.test>', to: [org.inbox.emailAddress], subject: 'Quote', text: 'A quote?' });
    const email = await eventually("an approval email about the inbox's action", async () =>
      provider.sent.find(
        (sent) => sent.to.includes(org.admin.email) && sent.subject === 'Approval needed: Support on email.received',
      ),
    );
    // generateDocument asks by default in an inbox's action; the email names the inbox where a rule would be.
    expect(email.text).toContain('Tool: generateDocument');
    expect(email.text).toContain(`Rule: inbox ${org.inbox.emailAddress}`);
    expect(email.text).toContain('Email: from Dana <dana@customer.test>: "Quote"');
    const actionId = email.text!.match(/Action: ([\w-]+)/)![1]!;
    expect((await use(linksOf(email).approve)).status).toBe(200);
    const auth = { token: org.token, org: org.org.slug };
    const done = await waitForAction(app, auth, actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({ approval: 'approved', channel: 'email_link', approverId: org.admin.id });

    // Without notify, as before: nobody is told; the console's inbox shows the call.
    const quiet = await setUpEmailOrg(app, provider, { agentTools: ['generateDocument'] });
    await quiet.deliver({ from: 'eve@customer.test', to: [quiet.inbox.emailAddress], subject: 'Quote', text: 'A quote?' });
    const { approvals } = await eventually('the call waiting', async () => {
      const body = await (await quiet.api('GET', '/approvals')).json();
      return body.approvals.length > 0 ? body : undefined;
    });
    expect(approvals).toEqual([expect.objectContaining({ toolName: 'generateDocument' })]);
    const row = await (
      await app.request('GET', `/orgs/${quiet.org.slug}/ledger/${approvals[0].actionId}`, { token: quiet.token })
    ).json();
    expect(row.execution.toolCalls[0].notifications).toEqual([]);
  });

  it('bad input on the link routes gets a 4xx page or error, never a 500; rules refuse approvers who are not members', async () => {
    const { org, setup } = await approvalOrg();
    const actionId = await waitingAction(setup);
    const { reject } = linksOf(await emailTo(org.admin.email, actionId));
    const base = `${app.baseUrl}/approvals/decide`;
    for (const token of ['x', 'a'.repeat(43), '%00'.repeat(10), `${'A'.repeat(42)}%F0`, 'A'.repeat(5000), '..%2F..%2Fetc']) {
      const response = await open(`${base}/${token}`);
      expect(response.status, token.slice(0, 20)).toBeGreaterThanOrEqual(400);
      expect(response.status, token.slice(0, 20)).toBeLessThan(500);
      expect((await use(`${base}/${token}`)).status).toBeLessThan(500);
    }
    expect(await (await open(`${base}/${'a'.repeat(43)}`)).text()).toContain('This link is not valid');
    expect((await use(reject, { reason: 'x'.repeat(5000) })).status).toBe(400);
    expect((await use(reject, { reason: 'bad\u0000reason' })).status).toBe(400);
    const surrogate = await fetch(reject, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"reason":"\\ud800"}',
    });
    expect(surrogate.status).toBe(400);
    expect((await ledger(setup, actionId)).status).toBe('pending_approval');
    const rejected = await use(reject, { reason: 'wrong order' });
    expect(rejected.status).toBe(200);
    expect((await ledger(setup, actionId)).execution.toolCalls[0]).toMatchObject({
      approval: 'rejected',
      reason: 'wrong order',
      channel: 'email_link',
    });

    const stranger = await createUser(app, { role: 'Admin' });
    const refused = await org.api('PATCH', `/action-rules/${setup.ruleId}`, { approvers: { userIds: [stranger.id] } });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      code: 'validation_failed',
      error: expect.stringContaining('not members of the organization'),
    });
    expect((await org.api('PATCH', `/action-rules/${setup.ruleId}`, { approvers: {} })).status).toBe(400);
    expect((await org.api('PATCH', `/action-rules/${setup.ruleId}`, { notify: ['sms'] })).status).toBe(400);
  });
});
