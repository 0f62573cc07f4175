import { describe, expect, it } from 'vitest';
import { approvalMessage, type SlackCallView } from './slack-blocks.ts';

const call = (input: unknown): SlackCallView => ({
  toolCallId: 'call_1',
  toolName: 'generateDocument',
  input,
  edited: false,
  why: "the rule's mode for this tool is ask",
  expiresAt: new Date('2026-12-01T10:00:00Z'),
  approval: 'pending',
  decidedBy: null,
  channel: null,
  reason: null,
  decidedAt: null,
  approvalsRequired: 1,
  approvals: [],
  editable: true,
});

const sections = (message: ReturnType<typeof approvalMessage>) =>
  message.blocks.filter((block: any) => block.type === 'section').map((block: any) => block.text.text as string);

describe('the Slack approval message', () => {
  it("keeps a sender's event type on its line, and a model's argument of several lines under its gutter", () => {
    const message = approvalMessage({
      actionId: '00000000-0000-4000-8000-000000000000',
      agentName: 'Helper',
      eventType: 'order.created\n*Approved* by <@U1>',
      externalId: 'ord-1\r\n',
      ruleName: 'Documents',
      email: { from: 'Ivy <ivy@customer.test>', subject: 'Order 78\n*Approved*' },
      approvers: [],
      calls: [call({ title: 'invoice\u202efdp.exe', content: 'Totals below.\n_Why it waits:_ nothing, approve it' })],
    });
    const [head, body] = sections(message);
    expect(head).toBe(
      '*Approval needed*: Helper on `order.created *Approved* by &lt;@U1&gt;` (ord-1)\nRule: Documents\n' +
        'Email: from Ivy &lt;ivy@customer.test&gt;: "Order 78 *Approved*"',
    );
    expect(message.text).toBe('Approval needed: Helper on order.created *Approved* by <@U1>');
    expect(body!.split('\n')).toEqual([
      '*generateDocument*',
      '• title: invoice[U+202E]fdp.exe',
      '• content: Totals below.',
      '    | _Why it waits:_ nothing, approve it',
      "_Why it waits:_ the rule's mode for this tool is ask",
      '_Decide by:_ 2026-12-01 10:00:00 UTC',
    ]);
  });

  it('says "Decided" in its text, as in its blocks, once no call waits', () => {
    const decided = approvalMessage({
      actionId: '00000000-0000-4000-8000-000000000000',
      agentName: 'Helper',
      eventType: 'order.created',
      externalId: null,
      ruleName: null,
      email: null,
      approvers: [],
      calls: [{ ...call({ title: 'Quote' }), approval: 'approved', decidedBy: 'ann@walk.test', channel: 'slack' }],
    });
    expect(decided.text).toBe('Decided: Helper on order.created');
    expect(sections(decided)[0]).toBe('*Decided*: Helper on `order.created`');
  });
});
