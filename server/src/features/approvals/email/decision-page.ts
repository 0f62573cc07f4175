import { randomBytes } from 'node:crypto';
import { MAX_DECISION_REASON_CHARS } from '../approvals.service.ts';
import { CHANNEL_WORDS } from '../channel-words.ts';
import { escapeHtml, formatUtc, oneLine, readableArguments } from './approval-email.ts';
import type { LinkPage } from './approval-links.service.ts';
import type { LinkRow } from './approval-mail.repo.ts';

type PageStatus = 200 | 403 | 404 | 409 | 410;

/**
 * The page a link opens, and what using it answers: served by the service itself, no session, no
 * script, no asset from anywhere (the CSP allows only this page's own style block and a form posted
 * back here), never cached, never sending its URL (the token) on as a Referer.
 */
export function renderDecisionPage(
  page: LinkPage,
  formAction: string,
): { status: PageStatus; html: string; headers: Record<string, string> } {
  const nonce = randomBytes(16).toString('base64');
  const { status, title, body } = content(page, formAction);
  const html = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">',
    `<title>${escapeHtml(title)}</title>`,
    `<style nonce="${nonce}">`,
    'body{font-family:system-ui,sans-serif;font-size:15px;color:#111;background:#f6f7f9;margin:0;padding:32px 16px}',
    'main{max-width:600px;margin:0 auto;background:#fff;border:1px solid #ddd;border-radius:8px;padding:24px}',
    'h1{font-size:20px;margin:0 0 16px}table{border-collapse:collapse;margin:12px 0}',
    'td{padding:3px 12px 3px 0;vertical-align:top}',
    'td.name{color:#444}td.value{white-space:pre-wrap;word-break:break-word}',
    'textarea{width:100%;box-sizing:border-box;min-height:80px;font:inherit}label{display:block;margin:12px 0 4px}',
    'button{font:inherit;font-weight:600;padding:10px 20px;border:0;border-radius:6px;color:#fff;cursor:pointer;margin-top:16px}',
    'button.approve{background:#1a7f37}button.reject{background:#b42318}.note{color:#444}',
    '</style></head><body><main>',
    `<h1>${escapeHtml(title)}</h1>`,
    body,
    '</main></body></html>',
  ].join('');
  return {
    status,
    html,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy':
        `default-src 'none'; style-src 'nonce-${nonce}'; ` + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      'referrer-policy': 'no-referrer',
      'x-robots-tag': 'noindex',
    },
  };
}

const row = (name: string, value: string) =>
  `<tr><td class="name">${escapeHtml(name)}</td><td class="value">${escapeHtml(value)}</td></tr>`;

/** The call; on an open link, the approvals given so far too (who, and why: an edit's reason is for the next approver). */
function summary(link: LinkRow, approvals: Array<{ email: string | null; reason: string | null }> = []): string {
  return `<table>${[
    row('Agent', link.agentName ?? 'An agent'),
    row('Event', oneLine(link.eventType)),
    row('Tool', link.toolName),
    // An approver before you edited the arguments: those are what an approval approves now.
    ...(link.approvedInput == null ? [] : [row('Edited', "an approver changed the model's arguments to these")]),
    ...readableArguments(link.approvedInput ?? link.input).map(([name, value]) => row(name, value)),
    ...approvals.map(({ email, reason }) => row('Approved by', `${email ?? 'someone'}${reason ? `: “${reason}”` : ''}`)),
  ].join('')}</table>`;
}

function decidedLine(link: LinkRow): string {
  if (link.approval === 'expired') return 'It expired: nobody decided it before its deadline.';
  if (link.approval === 'cancelled') return 'It was cancelled: the action ended before it was decided.';
  const who = link.decidedByEmail ? ` by ${link.decidedByEmail}` : '';
  const how = link.decisionChannel ? ` ${CHANNEL_WORDS[link.decisionChannel]}` : '';
  const when = link.decidedAt ? ` at ${formatUtc(link.decidedAt)}` : '';
  return `It was ${link.approval.replace('_', ' ')}${who}${how}${when}.`;
}

function content(page: LinkPage, formAction: string): { status: PageStatus; title: string; body: string } {
  const note = (text: string) => `<p class="note">${escapeHtml(text)}</p>`;
  switch (page.kind) {
    case 'unknown':
      return {
        status: 404,
        title: 'This link is not valid',
        body: note(
          'It may be cut short, or the action it belonged to was deleted. Nothing was decided. Open the console to decide.',
        ),
      };
    case 'open': {
      const approve = page.link.decision === 'approve';
      // Why, with either: an approval's is for the approvers after this one, a rejection's for the record.
      const reason =
        `<label for="reason">${approve ? 'Why (optional)' : 'Reason (optional)'}</label><textarea id="reason" name="reason" ` +
        `maxlength="${MAX_DECISION_REASON_CHARS}"></textarea>`;
      return {
        status: 200,
        title: approve ? 'Approve this tool call?' : 'Reject this tool call?',
        body:
          summary(page.link, page.approvals) +
          note(
            `Decide by ${formatUtc(page.link.expiresAt)}. You are deciding as ${page.link.approverEmail}. Nothing ` +
              `happens until you press the button.`,
          ) +
          `<form method="post" action="${escapeHtml(formAction)}">${reason}` +
          `<button type="submit" class="${approve ? 'approve' : 'reject'}">${approve ? 'Approve' : 'Reject'}</button></form>`,
      };
    }
    case 'done': {
      const approved = page.link.decision === 'approve';
      return {
        status: 200,
        title: approved ? 'Approved' : 'Rejected',
        body:
          summary(page.link) +
          note(
            !approved
              ? 'The call does not run.'
              : page.waitsFor > 0
                ? `Your approval is recorded. The call runs once ${page.waitsFor} more ` +
                  `${page.waitsFor === 1 ? 'approver approves' : 'approvers approve'} it; any rejection rejects it.`
                : 'The call runs and the agent goes on.',
          ) +
          note('You can close this page.'),
      };
    }
    case 'decided':
      return {
        status: 409,
        title: 'This call was decided already',
        body: summary(page.link) + note(`${decidedLine(page.link)} Nothing was changed.`),
      };
    case 'used':
      return {
        status: 409,
        title: 'This link was used already',
        body: summary(page.link) + note('Each link works once. Nothing was changed.'),
      };
    case 'expired':
      return {
        status: 410,
        title: 'This link has expired',
        body: summary(page.link) + note('The deadline of the call has passed. Nothing was changed.'),
      };
    case 'refused':
      return { status: 403, title: 'Nothing was decided', body: summary(page.link) + note(`${page.reason}.`) };
  }
}
