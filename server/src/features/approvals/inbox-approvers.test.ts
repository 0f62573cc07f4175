import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { setUpEmailOrg, useAppWithMailProvider, type FakeMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { documentThenText } from '../../../test/helpers/fake-model.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({}, (started) => ({ app, model, provider } = started));

type EmailOrg = Awaited<ReturnType<typeof setUpEmailOrg>>;

const assignmentPath = (org: EmailOrg) => `/email/inboxes/${org.inbox.id}/agents/${org.agentId}`;

/** The inbox's agent proposes a document (which asks, in an inbox's action) for an email received; its waiting call. */
async function waitingCall(org: EmailOrg) {
  model.script(documentThenText());
  await org.deliver({ from: 'Dana <dana@customer.test>', to: [org.inbox.emailAddress], subject: 'Quote', text: 'A quote?' });
  const { rows } = await eventually('the email action waiting', async () => {
    const body = await (await org.api('GET', '/ledger?kind=action')).json();
    return body.rows[0]?.status === 'pending_approval' ? body : undefined;
  });
  const actionId = rows[0].actionId as string;
  const action = await (await org.api('GET', `/ledger/${actionId}`)).json();
  return { actionId, toolCallId: action.execution.toolCalls[0].toolCallId as string };
}

const decide = (org: EmailOrg, call: { actionId: string; toolCallId: string }, token: string) =>
  app.request('POST', `/orgs/${org.org.slug}/actions/${call.actionId}/tool-calls/${call.toolCallId}/approve`, {
    token,
    body: {},
  });

const approvalEmailTo = (address: string, actionId: string) =>
  eventually(`an approval email to ${address}`, async () =>
    provider.sent.find((email) => email.to.includes(address) && email.text?.includes(`Action: ${actionId}`)),
  );

describe("who decides an inbox's calls: its assignment of the agent says, as an action rule does", () => {
  it('the members it names decide, as many as it asks, on every channel; an admin it does not name gets 403, recorded', async () => {
    const org = await setUpEmailOrg(app, provider, { agentTools: ['generateDocument'], notify: ['email'] });
    const guest = await createUser(app, { role: 'Guest', org: org.org.slug });
    const lead = await createUser(app, { role: 'Admin', org: org.org.slug });
    const guestToken = await signIn(app, guest);
    const changed = await org.api('PATCH', assignmentPath(org), {
      approvers: { userIds: [guest.id, lead.id] },
      minApprovals: 2,
    });
    expect(changed.status).toBe(200);
    expect(await changed.json()).toMatchObject({
      agentId: org.agentId,
      isPrimary: true,
      autoRespond: true,
      notify: ['email'],
      approvers: { userIds: [guest.id, lead.id] },
      minApprovals: 2,
      assignedByUserId: org.admin.id,
    });

    const call = await waitingCall(org);
    // The approval email goes to the approvers it names, not to the admin it does not.
    await approvalEmailTo(guest.email, call.actionId);
    const leadEmail = await approvalEmailTo(lead.email, call.actionId);
    expect(leadEmail.text).toContain(`Rule: inbox ${org.inbox.emailAddress}`);
    expect(provider.sent.some((email) => email.to.includes(org.admin.email))).toBe(false);

    // The named Guest sees the call in the approvals inbox, and that it needs two approvals.
    const inbox = await (await app.request('GET', `/orgs/${org.org.slug}/approvals`, { token: guestToken })).json();
    expect(inbox.approvals).toEqual([expect.objectContaining({ ...call, approvalsRequired: 2, approvals: [] })]);

    const refused = await decide(org, call, org.token);
    expect(refused.status).toBe(403);
    expect((await refused.json()).code).toBe('not_an_approver');

    // One approval runs nothing; the second approver's link runs the call.
    const first = await decide(org, call, guestToken);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ status: 'pending', approvalsRequired: 2, approvals: [{ approverId: guest.id }] });
    expect((await (await org.api('GET', `/ledger/${call.actionId}`)).json()).status).toBe('pending_approval');
    const approveLink = leadEmail.text!.match(/Approve: (\S+)/)![1]!;
    const used = await fetch(approveLink, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(),
    });
    expect(used.status).toBe(200);

    const done = await waitForAction(app, org.auth, call.actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const [decided] = done.execution.toolCalls;
    expect(decided).toMatchObject({ approval: 'approved', channel: 'email_link', approverId: lead.id });
    expect(decided.refusedAttempts).toEqual([
      expect.objectContaining({ channel: 'api', userId: org.admin.id, reason: expect.stringMatching(/^Not one of/) }),
    ]);
  });

  it("read while the call waits: a change applies to it, and with the assignment taken off the org's admins decide", async () => {
    const org = await setUpEmailOrg(app, provider, { agentTools: ['generateDocument'] });
    const guest = await createUser(app, { role: 'Guest', org: org.org.slug });
    const guestToken = await signIn(app, guest);
    const call = await waitingCall(org);
    // Made after the email came: the Guest may decide it now, and the admin may not.
    expect((await org.api('PATCH', assignmentPath(org), { approvers: { userIds: [guest.id] } })).status).toBe(200);
    expect((await decide(org, call, org.token)).status).toBe(403);

    expect((await org.api('DELETE', assignmentPath(org))).status).toBe(204);
    expect((await decide(org, call, guestToken)).status).toBe(403);
    expect((await decide(org, call, org.token)).status).toBe(200);
    expect((await waitForAction(app, org.auth, call.actionId, ['completed', 'failed'])).status).toBe('completed');
  });

  it("a change to the assignment's other settings: a new primary demotes the previous one; the rest is kept", async () => {
    const org = await setUpEmailOrg(app, provider);
    const other = await (
      await org.api('POST', '/agents', { name: 'Billing', instructions: 'Answer billing.', tools: [] })
    ).json();
    const assigned = await org.api('POST', `/email/inboxes/${org.inbox.id}/agents`, {
      agentId: other.id,
      approvalRules: { sendEmail: 'ask' },
      notify: ['slack'],
    });
    expect(assigned.status).toBe(201);
    expect(await assigned.json()).toMatchObject({ isPrimary: false, autoRespond: false, approvers: null, minApprovals: 1 });

    const promoted = await org.api('PATCH', `/email/inboxes/${org.inbox.id}/agents/${other.id}`, { isPrimary: true });
    expect(promoted.status).toBe(200);
    const { agents } = await (await org.api('GET', `/email/inboxes/${org.inbox.id}/agents`)).json();
    expect(agents).toEqual([
      expect.objectContaining({ agentId: other.id, isPrimary: true, approvalRules: { sendEmail: 'ask' }, notify: ['slack'] }),
      expect.objectContaining({ agentId: org.agentId, isPrimary: false, autoRespond: true }),
    ]);
  });

  it('bad input is a 4xx naming the field and changes nothing; another org, a Guest and a stranger change nothing', async () => {
    const org = await setUpEmailOrg(app, provider);
    const stranger = await createUser(app, { role: 'Admin' });
    const guest = await createUser(app, { role: 'Guest', org: org.org.slug });
    const invalid: Array<[unknown, RegExp]> = [
      [{}, /nothing to change/],
      [{ approvers: { userIds: [stranger.id] } }, /^body\/approvers\/userIds: not members of the organization/],
      [{ minApprovals: 2 }, /^body\/minApprovals: 2 approvals needed, but the approvers are 1 member$/],
      [{ approvers: { userIds: [guest.id] }, minApprovals: 2 }, /^body\/minApprovals: 2 approvals needed/],
      [{ minApprovals: 6 }, /minApprovals/],
      [{ minApprovals: 1.5 }, /minApprovals/],
      [{ approvers: {} }, /approvers/],
      [{ approvers: { userIds: ['not-a-uuid'] } }, /approvers/],
      [{ approvers: { userIds: Array.from({ length: 51 }, () => crypto.randomUUID()) } }, /approvers/],
      [{ approvers: { role: 'Guest' } }, /approvers/],
      [{ isPrimary: 'yes' }, /isPrimary/],
      [{ notify: ['sms'] }, /notify/],
      [{ approvalRules: { 'no such\u0000tool': 'ask' } }, /approvalRules/],
      [[], /body/],
    ];
    for (const [body, error] of invalid) {
      const answer = await org.api('PATCH', assignmentPath(org), body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(await answer.json(), JSON.stringify(body)).toMatchObject({
        code: 'validation_failed',
        error: expect.stringMatching(error),
      });
    }
    // Raw bodies: a lone surrogate, arrays nested 10,000 deep, and a body over the limit.
    const raw: Array<[string, number]> = [
      ['{"approvalRules":{"\\ud800":"ask"}}', 400],
      [`{"approvers":{"userIds":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`, 400],
      [JSON.stringify({ notify: ['email'], approvalRules: { [`x${'y'.repeat(2_000_000)}`]: 'ask' } }), 413],
    ];
    for (const [body, status] of raw) {
      const answer = await org.api('PATCH', assignmentPath(org), body);
      expect(answer.status, body.slice(0, 40)).toBe(status);
      expect(await answer.json(), body.slice(0, 40)).toEqual({ error: expect.any(String), code: expect.any(String) });
    }
    const tooMany = await org.api('POST', `/email/inboxes/${org.inbox.id}/agents`, {
      agentId: (await (await org.api('POST', '/agents', { name: 'Two', instructions: 'x', tools: [] })).json()).id,
      minApprovals: 2,
    });
    expect(tooMany.status).toBe(400);
    expect((await org.api('PATCH', `/email/inboxes/${org.inbox.id}/agents/not-a-uuid`, { minApprovals: 1 })).status).toBe(400);
    const unknown = await org.api('PATCH', `/email/inboxes/${org.inbox.id}/agents/${crypto.randomUUID()}`, { minApprovals: 1 });
    expect(unknown.status).toBe(404);

    // Another org's admin, naming this inbox under their own org or under this one; a Guest of this org.
    const other = await createTenant(app);
    const foreign = await app.request('PATCH', `/orgs/${other.org.slug}${assignmentPath(org)}`, {
      token: other.token,
      body: { autoRespond: false },
    });
    expect(foreign.status).toBe(404);
    const intruder = await app.request('PATCH', `/orgs/${org.org.slug}${assignmentPath(org)}`, {
      token: other.token,
      body: { autoRespond: false },
    });
    // Not a member: the org is not found for them, as any org they are not in.
    expect(intruder.status).toBe(404);
    const byGuest = await app.request('PATCH', `/orgs/${org.org.slug}${assignmentPath(org)}`, {
      token: await signIn(app, guest),
      body: { approvers: { userIds: [guest.id] } },
    });
    expect(byGuest.status).toBe(403);
    expect(
      (await app.request('PATCH', `/orgs/${org.org.slug}${assignmentPath(org)}`, { body: { autoRespond: false } })).status,
    ).toBe(401);

    const { agents } = await (await org.api('GET', `/email/inboxes/${org.inbox.id}/agents`)).json();
    expect(agents).toEqual([
      expect.objectContaining({ agentId: org.agentId, isPrimary: true, autoRespond: true, approvers: null, minApprovals: 1 }),
    ]);
  });
});
