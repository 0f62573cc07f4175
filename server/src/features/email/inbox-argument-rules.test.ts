import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { setUpEmailOrg, useAppWithMailProvider, type FakeMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { documentThenText } from '../../../test/helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, (started) => ({ app, model, provider } = started));
let orders: TestMcpServer;
beforeAll(async () => {
  orders = await startTestMcpServer();
});
afterAll(async () => {
  await orders?.close();
});

type EmailOrg = Awaited<ReturnType<typeof setUpEmailOrg>>;

const assignmentPath = (org: EmailOrg) => `/email/inboxes/${org.inbox.id}/agents/${org.agentId}`;
const RULES = [
  { tool: 'generateDocument', path: '/title', op: 'matches', value: '(?i)confidential', mode: 'deny' },
  { tool: 'generateDocument', path: '/title', op: 'matches', value: '^Order', mode: 'ask' },
];

/** Emails the inbox's agent answers with a document titled as the email: each one's action, once in `states`. */
function answering(org: EmailOrg) {
  const seen = new Set<string>();
  return async (title: string, states: string[]) => {
    model.script(documentThenText({ title, content: `# ${title}` }));
    await org.deliver({ from: 'Dana <dana@customer.test>', to: [org.inbox.emailAddress], subject: title, text: 'A document?' });
    const actionId: string = await eventually(`the action of the email "${title}"`, async () => {
      const { rows } = await (await org.api('GET', '/ledger?kind=action')).json();
      return rows.find((row: { actionId: string }) => !seen.has(row.actionId))?.actionId;
    });
    seen.add(actionId);
    return waitForAction(app, org.auth, actionId, states);
  };
}

describe("an inbox assignment's argument rules: an email's calls made stricter by their arguments, as an action rule's", () => {
  it('deny refuses the call and names the rule; ask makes it wait; an edit they refuse is 422; kept from when the email came', async () => {
    const org = await setUpEmailOrg(app, provider, {
      agentTools: ['generateDocument'],
      approvalRules: { generateDocument: 'allow', sendEmail: 'allow' },
    });
    const answered = answering(org);
    const saved = await org.api('PATCH', assignmentPath(org), { argumentRules: RULES });
    expect(saved.status).toBe(200);
    expect((await saved.json()).argumentRules).toEqual(RULES);
    // A change that does not name them keeps them.
    expect((await (await org.api('PATCH', assignmentPath(org), { autoRespond: true })).json()).argumentRules).toEqual(RULES);

    const refused = await answered('Confidential plan', ['completed', 'failed']);
    expect(refused.execution.toolCalls[0]).toMatchObject({
      mode: 'deny',
      status: 'denied',
      modeSource: { source: 'argument_rule', index: 0, rule: RULES[0] },
    });
    const told = 'Refused by the inbox\'s argument rule 1 (generateDocument: /title matches "(?i)confidential" -> deny)';
    expect(refused.execution.toolCalls[0].output.reason).toContain(told);
    expect(refused.execution.result.text).toContain("the inbox's argument rule 1");

    const waiting = await answered('Order 42', ['pending_approval']);
    const [call] = waiting.execution.toolCalls;
    expect(call).toMatchObject({ mode: 'ask', status: 'staged', modeSource: { source: 'argument_rule', index: 1 } });
    // The approvals inbox says which email the call would answer.
    const { approvals } = await (await org.api('GET', '/approvals')).json();
    expect(approvals).toEqual([
      expect.objectContaining({
        actionId: waiting.id,
        eventType: 'email.received',
        email: { from: 'Dana <dana@customer.test>', subject: 'Order 42' },
      }),
    ]);

    // Taken off after the email came: the next email runs without them, the waiting call keeps them.
    expect((await org.api('PATCH', assignmentPath(org), { argumentRules: [] })).status).toBe(200);
    const approve = (body: unknown) => org.api('POST', `/actions/${waiting.id}/tool-calls/${call.toolCallId}/approve`, body);
    const edited = await approve({ arguments: { title: 'Confidential order', content: '# x' } });
    expect(edited.status).toBe(422);
    expect(await edited.json()).toEqual({
      code: 'arguments_denied',
      error: expect.stringContaining("Refused by the inbox's argument rule 1"),
    });
    expect((await approve({})).status).toBe(200);
    expect((await waitForAction(app, org.auth, waiting.id, ['completed', 'failed'])).status).toBe('completed');

    const after = await answered('Confidential memo', ['completed', 'failed']);
    expect(after.execution.toolCalls[0]).toMatchObject({ mode: 'allow', status: 'completed', modeSource: { source: 'rule' } });
  });

  it('an assignment naming an MCP tool holds its server: not renamed or deleted until it names none', async () => {
    const org = await setUpEmailOrg(app, provider);
    const server = await (await org.api('POST', '/mcp-servers', { name: 'orders', url: orders.url })).json();
    const refund = { tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 100, mode: 'ask' };
    expect((await org.api('PATCH', assignmentPath(org), { argumentRules: [refund] })).status).toBe(200);
    const refused = async () => {
      for (const [method, body] of [
        ['PATCH', { name: 'shop' }],
        ['DELETE', undefined],
      ] as const) {
        const answer = await org.api(method, `/mcp-servers/${server.id}`, body);
        expect(answer.status, method).toBe(409);
        expect((await answer.json()).error).toContain(`inbox assignment "${org.inbox.emailAddress}: Support"`);
      }
    };
    await refused();
    const modes = { argumentRules: [], approvalRules: { orders__lookup_order: 'allow' } };
    expect((await org.api('PATCH', assignmentPath(org), modes)).status).toBe(200);
    await refused();
    expect((await org.api('PATCH', assignmentPath(org), { approvalRules: null })).status).toBe(200);
    expect((await org.api('DELETE', `/mcp-servers/${server.id}`)).status).toBe(204);
  });

  it('bad rules are a 400 naming the field, on assigning and on a change; nothing is saved; a Guest or another org changes nothing', async () => {
    const org = await setUpEmailOrg(app, provider);
    const other = await (await org.api('POST', '/agents', { name: 'Billing', instructions: 'x', tools: [] })).json();
    const bad = [
      [{ tool: 'sendEmail', path: '/to', op: 'matches', value: '(a+)+$', mode: 'ask' }],
      [{ tool: 'sendEmail', path: 'to', op: 'eq', value: 'x', mode: 'ask' }],
      [{ tool: 'sendEmail', path: '/to', op: 'gt', value: {}, mode: 'deny' }],
      [{ tool: 'sendEmail', path: '/to', op: 'eq', mode: 'deny' }],
      [{ tool: 'send email', path: '/to', op: 'exists', mode: 'ask' }],
      [{ tool: 'sendEmail', path: '/to', op: 'exists', mode: 'allow' }],
      Array.from({ length: 51 }, () => ({ tool: 'sendEmail', path: '/to', op: 'exists', mode: 'ask' })),
      { tool: 'sendEmail' },
    ];
    for (const argumentRules of bad) {
      for (const [method, path, body] of [
        ['PATCH', assignmentPath(org), { argumentRules }],
        ['POST', `/email/inboxes/${org.inbox.id}/agents`, { agentId: other.id, argumentRules }],
      ] as const) {
        const answer = await org.api(method, path, body);
        expect(answer.status, `${method} ${JSON.stringify(argumentRules).slice(0, 80)}`).toBe(400);
        expect(await answer.json()).toMatchObject({ code: 'validation_failed', error: expect.stringMatching(/argumentRules/) });
      }
    }
    const rule = { tool: 'sendEmail', path: '/to', op: 'exists', mode: 'ask' };
    const guest = await createUser(app, { role: 'Guest', org: org.org.slug });
    const byGuest = await app.request('PATCH', `/orgs/${org.org.slug}${assignmentPath(org)}`, {
      token: await signIn(app, guest),
      body: { argumentRules: [rule] },
    });
    expect(byGuest.status).toBe(403);
    const stranger = await createTenant(app);
    const foreign = await app.request('PATCH', `/orgs/${stranger.org.slug}${assignmentPath(org)}`, {
      token: stranger.token,
      body: { argumentRules: [rule] },
    });
    expect(foreign.status).toBe(404);

    const { agents } = await (await org.api('GET', `/email/inboxes/${org.inbox.id}/agents`)).json();
    expect(agents).toEqual([expect.objectContaining({ agentId: org.agentId, argumentRules: [] })]);
  });
});
