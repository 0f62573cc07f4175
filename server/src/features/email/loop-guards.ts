/**
 * Why a received message must not get an automatic answer, if it must not: mail loops (two
 * auto-responders answering each other) and answers to bounces or lists are the classic failures of
 * an auto-responder (RFC 3834). The per-thread hourly cap, which needs the database, is checked
 * where the answer is decided.
 */
const SYSTEM_SENDERS = /^(mailer-daemon|postmaster|no-?reply|do-?not-?reply|bounces?|notifications?-noreply)([+.-].*)?$/i;

export function autoReplyRefusal(message: {
  headers: Record<string, string>;
  from: string;
  fromOwnAddress: boolean;
}): string | undefined {
  const { headers } = message;
  const autoSubmitted = headers['auto-submitted']?.trim().toLowerCase();
  if (autoSubmitted && autoSubmitted !== 'no') return `it was sent automatically (Auto-Submitted: ${autoSubmitted.slice(0, 50)})`;
  if (
    headers['x-autoreply'] ||
    headers['x-autorespond'] ||
    /\b(all|autoreply)\b/i.test(headers['x-auto-response-suppress'] ?? '')
  ) {
    return 'it is an automatic reply';
  }
  const precedence = headers.precedence?.trim().toLowerCase();
  if (precedence && ['bulk', 'list', 'junk', 'auto_reply'].includes(precedence)) return `it is ${precedence} mail (Precedence)`;
  if (headers['list-id'] || headers['list-unsubscribe']) return 'it came through a mailing list';
  if (headers['return-path']?.trim() === '<>' || /multipart\/report/i.test(headers['content-type'] ?? ''))
    return 'it is a delivery report';
  const localPart = message.from.slice(0, message.from.lastIndexOf('@'));
  if (SYSTEM_SENDERS.test(localPart)) return `its sender (${message.from}) does not take replies`;
  if (message.fromOwnAddress) return 'it was sent from one of our own addresses';
  return undefined;
}
