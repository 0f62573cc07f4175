/**
 * The approval email: what an approver needs to decide without opening the console, as text and as
 * HTML. Every value is the model's or a sender's, so it is escaped (never raw HTML) and cut.
 */

const MAX_VALUE_CHARS = 300;
const MAX_ARGUMENTS = 30;

export interface CallToDecide {
  toolName: string;
  input: unknown;
  /** Why it waits: the rule, an argument rule, the default, or an interrupted call. */
  why: string;
  expiresAt: Date | null;
  approveUrl: string;
  rejectUrl: string;
  /** Whether a reply may send it back (a run over its budget is only approved or rejected). */
  canSendBack: boolean;
}

export interface ApprovalEmailInput {
  agentName: string;
  /** The action rule, or the inbox an email's action came from; null when neither is left. */
  ruleName: string | null;
  /** How many distinct approvers must approve each call (the rule's minApprovals). */
  minApprovals: number;
  eventType: string;
  externalId: string | null;
  /** The email an inbox's action answers: its sender and subject. */
  email: { from: string; subject: string } | null;
  actionId: string;
  approverName: string;
  calls: CallToDecide[];
  consoleUrl: string;
}

export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

const cut = (text: string, max = MAX_VALUE_CHARS) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;

// Control characters a reader cannot see, and the bidirectional controls that reorder what follows
// them (U+202E shows "fdp.exe" as "exe.pdf"): an approver must see what they approve, so each is
// shown as its code point.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for.
const HIDDEN_CHARACTERS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const LINE_BREAKS = /\r\n?|[\u2028\u2029]/g;
const visible = (text: string) =>
  text
    .replace(LINE_BREAKS, '\n')
    .replace(HIDDEN_CHARACTERS, (char) => `[U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);

/**
 * Text of one line, for a field the email lays out line by line (an event type, a name, a subject):
 * a line break a sender put in it becomes a space, so that it cannot pass for a line of the email.
 */
export const oneLine = (text: string) =>
  visible(text)
    .replace(/\s*\n\s*/g, ' ')
    .trim();

/**
 * A value of several lines in a text laid out line by line: each line after the first under a
 * gutter, so that no line of a model's argument (`Approve: https://...`) reads as one of ours.
 */
export const guttered = (value: string, indent: string) => value.split('\n').join(`\n${indent}| `);

/**
 * A call's arguments as `name: value` pairs: strings as they are, anything else as compact JSON;
 * long values cut; hidden characters shown; a name on one line, a value's line breaks kept (`\n`).
 */
export function readableArguments(input: unknown): Array<[string, string]> {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return [['(arguments)', cut(visible(JSON.stringify(input) ?? 'none'))]];
  const entries = Object.entries(input);
  const lines = entries
    .slice(0, MAX_ARGUMENTS)
    .map(([name, value]): [string, string] => [
      cut(oneLine(name), 80),
      cut(visible(typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null'))),
    ]);
  if (entries.length > MAX_ARGUMENTS) lines.push(['…', `${entries.length - MAX_ARGUMENTS} more arguments (see the console)`]);
  return lines;
}

/** The email an action answers, on one line: `from Ivy <ivy@customer.test>: "Order 78"`. */
export const emailLine = (email: { from: string; subject: string }) => `from ${email.from}: "${email.subject}"`;

/** A moment as an approver reads it: `2026-11-24 10:00:00 UTC`. */
export const formatUtc = (at: Date | null) =>
  at
    ? at
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')
    : 'none';

export function approvalSubject(input: Pick<ApprovalEmailInput, 'agentName' | 'eventType'>): string {
  return cut(oneLine(`Approval needed: ${input.agentName} on ${input.eventType}`), 200);
}

/** What both parts of the email say: its opening, its context lines (each on one line, cut) and how a reply decides. */
function emailParts(input: ApprovalEmailInput) {
  const many = input.calls.length > 1;
  const what = many ? `${input.calls.length} tool calls that need` : 'a tool call that needs';
  const approvals = `${input.minApprovals} different approvers must approve each call; one rejection rejects it`;
  const lines: Array<[string, string] | null> = [
    ['Agent', input.agentName],
    input.ruleName === null ? null : ['Rule', input.ruleName],
    ['Event', input.eventType + (input.externalId ? ` (${input.externalId})` : '')],
    input.email ? ['Email', emailLine(input.email)] : null,
    ['Action', input.actionId],
    input.minApprovals > 1 ? ['Approvals', approvals] : null,
  ];
  return {
    many,
    intro: `${input.agentName} wants to run ${what} your approval.`,
    context: lines.flatMap((line) => (line ? [[line[0], cut(oneLine(line[1]), 200)] as const] : [])),
    /** A run over its budget is only approved or rejected: its email does not offer to send it back. */
    sendBack: input.calls.every((call) => call.canSendBack),
    everyCall: many ? ' (it decides every call listed here)' : '',
  };
}

const SEND_BACK_HINT = 'and what the agent should do instead (the call is not run; the agent goes on),';

function approvalText(input: ApprovalEmailInput, parts: ReturnType<typeof emailParts>): string {
  const { many, sendBack, everyCall } = parts;
  return [
    `Hello ${input.approverName},`,
    '',
    parts.intro,
    '',
    ...parts.context.map(([name, value]) => `${name}: ${value}`),
    '',
    ...input.calls.flatMap((call, index) => [
      `${many ? `${index + 1}. ` : ''}Tool: ${call.toolName}`,
      ...readableArguments(call.input).map(([name, value]) => `   ${name}: ${guttered(value, '      ')}`),
      `   Why it waits: ${call.why}`,
      `   Decide by: ${formatUtc(call.expiresAt)}`,
      `   Approve: ${call.approveUrl}`,
      `   Reject: ${call.rejectUrl}`,
      '',
    ]),
    'Or reply to this email with "approve" or "reject" (a reason may follow either)' +
      (sendBack ? `, or "send back:" ${SEND_BACK_HINT}` : '') +
      ` on the first line${everyCall}.`,
    `Each link works once, only for you, until the deadline. The console: ${input.consoleUrl}`,
  ].join('\n');
}

const row = (name: string, value: string) =>
  `<tr><td style="padding:2px 12px 2px 0;color:#555;vertical-align:top">${escapeHtml(name)}</td>` +
  `<td style="padding:2px 0;white-space:pre-wrap;word-break:break-word">${escapeHtml(value)}</td></tr>`;
const button = (href: string, label: string, color: string) =>
  `<a href="${escapeHtml(href)}" style="display:inline-block;padding:8px 16px;margin-right:8px;border-radius:4px;` +
  `background:${color};color:#fff;text-decoration:none;font-weight:600">${label}</a>`;

function approvalHtml(input: ApprovalEmailInput, parts: ReturnType<typeof emailParts>): string {
  const { sendBack, everyCall } = parts;
  return [
    '<div style="font-family:system-ui,sans-serif;font-size:14px;color:#111;max-width:640px">',
    `<p>Hello ${escapeHtml(input.approverName)},</p>`,
    `<p>${escapeHtml(parts.intro)}</p>`,
    `<table>${parts.context.map(([name, value]) => row(name, value)).join('')}</table>`,
    ...input.calls.map(
      (call) =>
        `<div style="border:1px solid #ddd;border-radius:6px;padding:12px;margin:12px 0">` +
        `<p style="margin:0 0 8px"><strong>${escapeHtml(call.toolName)}</strong></p>` +
        `<table>${readableArguments(call.input)
          .map(([name, value]) => row(name, value))
          .join('')}${row('Why it waits', call.why)}${row('Decide by', formatUtc(call.expiresAt))}</table>` +
        '<p style="margin:12px 0 0">' +
        `${button(call.approveUrl, 'Approve', '#1a7f37')}${button(call.rejectUrl, 'Reject', '#b42318')}</p>` +
        '</div>',
    ),
    '<p style="color:#555">Or reply with <strong>approve</strong> or <strong>reject</strong> (a reason may follow either)' +
      (sendBack ? `, or <strong>send back:</strong> ${SEND_BACK_HINT}` : '') +
      ` on the first line${everyCall}. ` +
      'Each link works once, only for you, until the deadline.</p>',
    `<p style="color:#555"><a href="${escapeHtml(input.consoleUrl)}">Open the console</a></p>`,
    '</div>',
  ].join('');
}

/** Text and HTML of one approver's email listing every call of the action that waits for them. */
export function renderApprovalEmail(input: ApprovalEmailInput): { text: string; html: string } {
  const parts = emailParts(input);
  return { text: approvalText(input, parts), html: approvalHtml(input, parts) };
}

/** What the stored copy of an approval email says in place of its links: anyone who reads the thread could use them. */
export const redactLinks = (body: string, urls: string[]) =>
  urls.reduce((text, url) => text.split(url).join('[one-time link]'), body);
