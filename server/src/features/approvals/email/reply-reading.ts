/** Reading a reply to an approval email: its decision, and whether its sender proved to be who they say. */
import { MAX_DECISION_REASON_CHARS } from '../approvals.service.ts';

export type ReplyDecision =
  /** `reason`: the words after it (why), kept with the approval as on every channel. */
  | { kind: 'approve'; reason: string | null }
  | { kind: 'reject'; reason: string | null }
  /** Not run: the agent gets the message and goes on. */
  | { kind: 'send_back'; reason: string }
  | { kind: 'unclear'; firstLine: string };

/** The words after a decision's keyword: its reason or message, without the punctuation that joins them. */
const rest = (line: string, keyword: string) =>
  line
    .slice(keyword.length)
    .replace(/^[\s:,.;!–—-]+/, '')
    .trim()
    .slice(0, MAX_DECISION_REASON_CHARS);

/**
 * The first line that is not quoted (`>`) and not empty decides: it starts with `approve` or `reject`
 * (any case; either may be followed by a reason) or `send back` followed by what the agent should do
 * instead. A line naming two of them, a send back without a message, or anything else, is unclear.
 */
export function readReplyDecision(text: string): ReplyDecision {
  const first =
    text
      .replace(/\r\n?/g, '\n')
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line.length > 0 && !line.startsWith('>')) ?? '';
  const sendBack = /^send(ing)? (it )?back\b/i.exec(first);
  if (sendBack) {
    const message = rest(first, sendBack[0]);
    return message ? { kind: 'send_back', reason: message } : { kind: 'unclear', firstLine: first.slice(0, 200) };
  }
  const approve = /^approved?\b/i.exec(first);
  const reject = /^reject(ed)?\b/i.exec(first);
  if (approve && !/\breject/i.test(first)) return { kind: 'approve', reason: rest(first, approve[0]) || null };
  if (reject && !/\bapprove/i.test(first)) {
    const reason = rest(first, reject[0]);
    return { kind: 'reject', reason: reason || null };
  }
  return { kind: 'unclear', firstLine: first.slice(0, 200) };
}

const FAILING = new Set(['fail', 'softfail', 'permerror']);

/**
 * Why the provider's checks say the sender is not who the From says, if they say so: the provider's
 * own SPF/DKIM/DMARC results (Resend's `authentication`), and the `Authentication-Results` header
 * (RFC 8601) where present. A result of `none` (nothing to check) is not a failure.
 */
export function authenticationFailure(
  authentication: Record<string, string> | null,
  headers: Record<string, string>,
): string | undefined {
  for (const [method, result] of Object.entries(authentication ?? {})) {
    if (FAILING.has(String(result).toLowerCase())) return `the provider's ${method.toUpperCase()} check says ${result}`;
  }
  const results = headers['authentication-results'];
  if (results) {
    for (const match of results.matchAll(/\b(spf|dkim|dmarc)\s*=\s*([a-z]+)/gi)) {
      if (FAILING.has(match[2]!.toLowerCase()))
        return `Authentication-Results says ${match[1]!.toLowerCase()}=${match[2]!.toLowerCase()}`;
    }
  }
  return undefined;
}
