import { storableJson } from '../../lib/json-input.ts';
import {
  AttachmentTooLargeError,
  downloadAttachment,
  type MailClientForKey,
  MailProviderError,
  type ReceivedAttachmentSummary,
} from './mail-client.ts';
import { boundedHeaders, dateOf, messageIdsOf, normalizeMessageId, sanitizeEmailHtml, textOfHtml } from './email-content.ts';

export interface InboundLimits {
  maxAttachmentBytes: number;
  maxAttachments: number;
  downloadTimeoutMs: number;
}

export interface FetchedAttachment {
  providerAttachmentId: string;
  filename: string;
  contentType: string;
  contentDisposition: string | null;
  contentId: string | null;
  sizeBytes: number;
  content: Uint8Array | null;
  status: 'stored' | 'failed' | 'skipped';
  error: string | null;
}

/** A received email as we store it: sanitized, its threading headers parsed, its attachments downloaded. */
export interface FetchedEmail {
  from: string;
  to: string[];
  cc: string[];
  subject: string;
  sentAt: Date | null;
  headers: Record<string, string>;
  /** The provider's SPF/DKIM/DMARC results, when it gave them. */
  authentication: Record<string, string> | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  html: string | null;
  text: string;
  attachments: FetchedAttachment[];
}

/** The provider's `authentication` object as we keep it: method -> result (strings only, bounded). */
export function authenticationOf(value: unknown): Record<string, string> | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const kept: Record<string, string> = {};
  for (const method of ['spf', 'dkim', 'dmarc']) {
    const raw = (value as Record<string, unknown>)[method];
    const nested = typeof raw === 'object' && raw !== null ? (raw as { result?: unknown; status?: unknown }) : undefined;
    const result = typeof raw === 'string' ? raw : (nested?.result ?? nested?.status);
    if (typeof result === 'string' && result.length <= 40) kept[method] = result.toLowerCase();
  }
  return Object.keys(kept).length > 0 ? kept : null;
}

const MAX_TEXT_CHARS = 1024 * 1024;
const strings = (value: unknown) => (Array.isArray(value) ? value.filter((item) => typeof item === 'string').slice(0, 100) : []);

/** A header of the provider's flat header object, by any case of its name. */
function rawHeader(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name)
      return Array.isArray(value) ? value.map(String).join(' ') : typeof value === 'string' ? value : undefined;
  }
  return undefined;
}

/**
 * Where each attachment to download is: the provider's listing of them carries every link, so an email
 * with several takes one request (a page per 100) in place of one each; a link it lacks, or a listing
 * that failed, is asked for on its own, as a single attachment's is.
 */
async function linksOf(
  api: MailClientForKey,
  emailId: string,
  wanted: ReceivedAttachmentSummary[],
): Promise<Map<string, string>> {
  const listed =
    wanted.length > 1 && wanted.some((summary) => !summary.download_url)
      ? await api.listReceivedAttachments(emailId).catch(() => [])
      : wanted;
  return new Map(
    listed.flatMap((summary) => (typeof summary.download_url === 'string' ? [[summary.id, summary.download_url] as const] : [])),
  );
}

/**
 * Downloads an email's attachments within the limits (their links expire in an hour); the others are
 * kept as skipped with why. A transient failure throws, so that the notification is retried; on the
 * last attempt, or for a final answer (gone, too large), the attachment is kept as failed or skipped.
 */
async function downloadAttachments(
  api: MailClientForKey,
  emailId: string,
  summaries: ReceivedAttachmentSummary[],
  limits: InboundLimits,
  lastAttempt: boolean,
): Promise<FetchedAttachment[]> {
  const sizeOf = (summary: ReceivedAttachmentSummary) => (Number.isSafeInteger(summary.size) ? summary.size! : 0);
  const wanted = summaries.filter(
    (summary, index) => index < limits.maxAttachments && sizeOf(summary) <= limits.maxAttachmentBytes,
  );
  const links = await linksOf(api, emailId, wanted);
  const attachments: FetchedAttachment[] = [];
  for (const [index, summary] of summaries.entries()) {
    const base = {
      providerAttachmentId: String(summary.id).slice(0, 200),
      filename: (summary.filename ?? `attachment-${index + 1}`).slice(0, 255),
      contentType: (summary.content_type ?? 'application/octet-stream').slice(0, 255),
      contentDisposition: summary.content_disposition?.slice(0, 100) ?? null,
      contentId: summary.content_id?.slice(0, 255) ?? null,
      sizeBytes: sizeOf(summary),
      content: null,
    };
    if (index >= limits.maxAttachments) {
      attachments.push({
        ...base,
        status: 'skipped',
        error: `Not downloaded: over the limit of ${limits.maxAttachments} attachments per email`,
      });
    } else if (base.sizeBytes > limits.maxAttachmentBytes) {
      attachments.push({
        ...base,
        status: 'skipped',
        error: `Not downloaded: over the limit of ${limits.maxAttachmentBytes} bytes`,
      });
    } else {
      try {
        const url = links.get(summary.id) ?? (await api.getReceivedAttachment(emailId, summary.id)).download_url;
        const content = await downloadAttachment(url, {
          maxBytes: limits.maxAttachmentBytes,
          timeoutMs: limits.downloadTimeoutMs,
        });
        attachments.push({ ...base, content, sizeBytes: content.length, status: 'stored', error: null });
      } catch (error) {
        if (error instanceof MailProviderError && error.transient && !lastAttempt) throw error;
        const skipped = error instanceof AttachmentTooLargeError;
        attachments.push({
          ...base,
          status: skipped ? 'skipped' : 'failed',
          error: `Not downloaded: ${(error as Error).message}`.slice(0, 1000),
        });
      }
    }
  }
  return attachments;
}

/**
 * Fetches a received email and downloads its attachments (their links expire in an hour). A
 * transient failure throws, so that the notification is retried; on the last attempt, or for a
 * final answer (gone, too large), the attachment is kept as failed or skipped with its reason.
 */
export async function fetchReceivedEmail(
  api: MailClientForKey,
  emailId: string,
  limits: InboundLimits,
  lastAttempt: boolean,
): Promise<FetchedEmail> {
  // Every part of a received email is the sender's: text PostgreSQL cannot store (NUL) is replaced.
  const email = storableJson(await api.getReceivedEmail(emailId)).value;
  const summaries: ReceivedAttachmentSummary[] = Array.isArray(email.attachments)
    ? email.attachments
    : await api.listReceivedAttachments(emailId);
  const attachments = await downloadAttachments(api, emailId, summaries, limits, lastAttempt);

  const html = typeof email.html === 'string' && email.html.length > 0 ? sanitizeEmailHtml(email.html) : null;
  const text = (typeof email.text === 'string' && email.text.trim() ? email.text : html ? textOfHtml(html) : '').slice(
    0,
    MAX_TEXT_CHARS,
  );
  const headers = boundedHeaders(email.headers);
  return {
    from: String(email.from ?? '').slice(0, 1000),
    to: strings(email.to),
    cc: strings(email.cc),
    subject: (email.subject ?? rawHeader(email.headers, 'subject') ?? '').slice(0, 998),
    sentAt: dateOf(rawHeader(email.headers, 'date')) ?? dateOf(email.created_at),
    headers,
    authentication: authenticationOf(email.authentication),
    messageId: normalizeMessageId(email.message_id ?? rawHeader(email.headers, 'message-id') ?? '') ?? null,
    inReplyTo: messageIdsOf(rawHeader(email.headers, 'in-reply-to'))[0] ?? null,
    references: messageIdsOf(rawHeader(email.headers, 'references')),
    html,
    text,
    attachments,
  };
}
