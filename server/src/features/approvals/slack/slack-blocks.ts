import type { DecisionChannel, ToolCallApproval } from '../../../db/schema.ts';
import { CHANNEL_WORDS } from '../channel-words.ts';
import { emailLine, formatUtc, guttered, oneLine, readableArguments } from '../email/approval-email.ts';
import type { Block } from './slack-client.ts';

/** Slack's mrkdwn treats these three as control characters: every value from a model or a sender is escaped. */
export const escapeMrkdwn = (text: string) =>
  text.replace(/[&<>]/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[char]!);
/** At most `max` characters: a longer text ends in an ellipsis (Slack refuses a block over its limit). */
export const clipped = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const plain = (text: string, max = 150) => ({ type: 'plain_text', text: clipped(text, max) });

/** The four buttons' action ids; a button's value names the call (`{ a: actionId, t: toolCallId }`). */
export const SLACK_ACTIONS = ['approve', 'edit', 'send_back', 'reject'] as const;
export type SlackAction = (typeof SLACK_ACTIONS)[number];
export const callRef = (actionId: string, toolCallId: string) => JSON.stringify({ a: actionId, t: toolCallId });

export interface SlackCallView {
  toolCallId: string;
  toolName: string;
  /** What an approval approves now: an approver's edit, or the model's arguments. */
  input: unknown;
  edited: boolean;
  why: string;
  expiresAt: Date | null;
  approval: ToolCallApproval;
  decidedBy: string | null;
  channel: DecisionChannel | null;
  reason: string | null;
  decidedAt: Date | null;
  approvalsRequired: number;
  /** The approvals so far: who (a Slack mention or an email), and why when they said. */
  approvals: Array<{ by: string; reason: string | null }>;
  /** A run over its budget only asks to go on: nothing to edit or send back. */
  editable: boolean;
}

export interface SlackMessageView {
  actionId: string;
  agentName: string;
  eventType: string;
  externalId: string | null;
  ruleName: string | null;
  /** The email an inbox's action answers: its sender and subject. */
  email: { from: string; subject: string } | null;
  /** Who may decide: Slack mentions of those found in the workspace, emails of the others. */
  approvers: string[];
  calls: SlackCallView[];
}

const DONE: Partial<Record<ToolCallApproval, string>> = {
  approved: ':white_check_mark: Approved',
  rejected: ':no_entry: Rejected',
  sent_back: ':leftwards_arrow_with_hook: Sent back',
  expired: ':hourglass: Expired: nobody decided it before its deadline',
  cancelled: 'Cancelled: the action ended before it was decided',
};

/** What became of a decided call, for everyone in the channel. */
export function decisionLine(call: Pick<SlackCallView, 'approval' | 'decidedBy' | 'channel' | 'reason' | 'decidedAt'>) {
  const done = DONE[call.approval] ?? call.approval;
  if (call.approval === 'expired' || call.approval === 'cancelled') return done;
  const who = call.decidedBy ? ` by ${call.decidedBy}` : '';
  const how = call.channel ? ` ${CHANNEL_WORDS[call.channel]}` : '';
  const when = call.decidedAt ? ` at ${formatUtc(call.decidedAt)}` : '';
  const reason = call.reason ? `: ${escapeMrkdwn(call.reason.slice(0, 500))}` : '';
  return `${done}${who}${how}${when}${reason}`;
}

/** "1 of 2 approvals: <@U1> (“the customer asked for 200”)": each approver's why, for the next one to read. */
function approvalCount(call: SlackCallView): string {
  const each = call.approvals.map(({ by, reason }) => `${by}${reason ? ` (“${escapeMrkdwn(clipped(reason, 300))}”)` : ''}`);
  const count = `${call.approvals.length} of ${call.approvalsRequired} approvals`;
  return clipped(each.length > 0 ? `${count}: ${each.join(', ')}` : count, 3000);
}

function callBlocks(actionId: string, call: SlackCallView): Block[] {
  const args = readableArguments(call.input).map(
    ([name, value]) => `• ${escapeMrkdwn(name)}: ${guttered(escapeMrkdwn(value), '    ')}`,
  );
  const text = [
    `*${escapeMrkdwn(call.toolName)}*${call.edited ? ' (arguments edited by an approver)' : ''}`,
    ...args,
    `_Why it waits:_ ${escapeMrkdwn(call.why)}`,
    ...(call.expiresAt ? [`_Decide by:_ ${formatUtc(call.expiresAt)}`] : []),
  ].join('\n');
  const blocks: Block[] = [{ type: 'section', text: { type: 'mrkdwn', text: text.slice(0, 3000) } }];
  const count = call.approvalsRequired > 1 ? approvalCount(call) : null;
  if (call.approval !== 'pending') {
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: decisionLine(call).slice(0, 3000) }] });
    return blocks;
  }
  if (count) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: count }] });
  const value = callRef(actionId, call.toolCallId);
  const button = (action: SlackAction, label: string, style?: 'primary' | 'danger') => ({
    type: 'button',
    action_id: action,
    text: plain(label),
    value,
    ...(style && { style }),
  });
  blocks.push({
    type: 'actions',
    block_id: `call:${call.toolCallId}`.slice(0, 255),
    elements: [
      button('approve', 'Approve', 'primary'),
      ...(call.editable ? [button('edit', 'Edit'), button('send_back', 'Send back')] : []),
      button('reject', 'Reject', 'danger'),
    ],
  });
  return blocks;
}

/** One message per action that waits: the agent, the event, and per call its arguments, why it waits and its buttons. */
export function approvalMessage(view: SlackMessageView): { text: string; blocks: Block[] } {
  // A sender's event type and id, an admin's names: each kept on the one line it is given here.
  const inline = (text: string) => escapeMrkdwn(oneLine(text));
  const event = `\`${inline(view.eventType)}\`${view.externalId ? ` (${inline(view.externalId)})` : ''}`;
  const waiting = view.calls.filter((call) => call.approval === 'pending').length;
  const state = waiting > 0 ? 'Approval needed' : 'Decided';
  const head = `*${state}*`;
  const rule = view.ruleName ? `\nRule: ${inline(view.ruleName)}` : '';
  const email = view.email ? `\nEmail: ${inline(emailLine(view.email))}` : '';
  const blocks: Block[] = [
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `${head}: ${inline(view.agentName)} on ${event}${rule}${email}`,
      },
    },
    ...(view.approvers.length > 0
      ? [{ type: 'context', elements: [{ type: 'mrkdwn', text: `Approvers: ${view.approvers.join(', ')}`.slice(0, 3000) }] }]
      : []),
    ...view.calls.flatMap((call) => [{ type: 'divider' }, ...callBlocks(view.actionId, call)]),
  ];
  // What notifications and screen readers read of the message: it says what the blocks say.
  const text = oneLine(`${state}: ${view.agentName} on ${view.eventType}`).slice(0, 300);
  return { text, blocks: blocks.slice(0, 50) };
}
