import { type Dispatcher, request } from 'undici';
import { readBounded } from '../../lib/bounded-body.ts';
import { deadline } from '../../lib/deadline.ts';

/**
 * The `mail` provider's HTTP API (Resend's), typed from its documented shapes: one client per org's
 * API key, over undici's request (fetch's Response, Headers and web streams cost more than a call's
 * JSON). Transient answers (429, honouring `retry-after`, and 5xx) and network failures are retried
 * a few times; anything else becomes a MailProviderError with the provider's own `name` and
 * `message`. The official `resend` package reads its base URL from process.env only, and
 * the base URL here is per deployment (MAIL_API_URL), so this small client stands in for it.
 */

export interface MailDomain {
  id: string;
  name: string;
  status: string;
  capabilities?: { sending?: string; receiving?: string };
}

/** POST /emails: `from` as "Name <address>", at most 50 recipients. */
export interface OutgoingEmail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html?: string;
  cc?: string[];
  reply_to?: string[];
  headers?: Record<string, string>;
  attachments?: Array<{ filename: string; content: string; content_type?: string }>;
  tags?: Array<{ name: string; value: string }>;
}

/** GET /emails/{id}: what we use of a sent email. */
export interface SentEmailRecord {
  id: string;
  message_id?: string | null;
  last_event?: string | null;
}

export interface ReceivedAttachmentSummary {
  id: string;
  filename: string | null;
  content_type: string | null;
  content_disposition?: string | null;
  content_id?: string | null;
  size?: number;
  /** In the attachments' listing (not in the email's own list): where to download it, valid one hour. */
  download_url?: string;
}

/** GET /emails/receiving/{id}: a received message, with its bodies and (flat) headers. */
export interface ReceivedEmail {
  id: string;
  from: string;
  to: string[];
  cc?: string[] | null;
  reply_to?: string[] | null;
  subject: string | null;
  html: string | null;
  text: string | null;
  headers: Record<string, string> | null;
  message_id: string | null;
  created_at: string;
  /** The provider's SPF, DKIM and DMARC results. */
  authentication?: { spf?: unknown; dkim?: unknown; dmarc?: unknown } | null;
  attachments: ReceivedAttachmentSummary[];
}

/** GET /emails/receiving/{email_id}/attachments/{id}: where to download it (valid one hour). */
export interface ReceivedAttachment extends ReceivedAttachmentSummary {
  download_url: string;
  expires_at: string;
}

export interface MailClientOptions {
  baseUrl: string;
  timeoutMs: number;
  /** Retries of a transient failure (so at most 1 + retries attempts). */
  retries: number;
  /** Wait before retry n (1-based) when the provider gave no retry-after. */
  backoffMs?: (retry: number) => number;
  /** The time a retry-after date is measured from (the service's clock). */
  now?: () => number;
}

/** The provider's answers are small JSON documents: one larger than this is refused, not read. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** What the provider answered when it refused, or why it could not be reached (status 0). */
export class MailProviderError extends Error {
  readonly status: number;
  /** The provider's error name (`restricted_api_key`, `validation_error`, ...), or `unreachable`. */
  readonly providerName: string;
  constructor(status: number, providerName: string, message: string) {
    super(message);
    this.name = 'MailProviderError';
    this.status = status;
    this.providerName = providerName;
  }

  /**
   * Worth another try later rather than a final answer: the provider unreachable (no answer, which
   * may still have been a send), busy (429, 5xx), or the same send in flight under its idempotency
   * key (409 `concurrent_idempotent_requests`).
   */
  get transient(): boolean {
    return this.status === 0 || isBusy(this.status) || this.providerName === 'concurrent_idempotent_requests';
  }
}

const USER_AGENT = 'agent-platform/0.1 (+https://github.com/agent-platform)';
/** A retry-after longer than this is not waited for: the caller's job retries later instead. */
const MAX_RETRY_AFTER_MS = 10_000;

/** The provider busy: worth a retry. */
const isBusy = (status: number) => status === 429 || status >= 500;

function retryAfterMs(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function errorOf(status: number, text: string): MailProviderError {
  let body: { message?: unknown; name?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not JSON: keep the status
  }
  const message = typeof body.message === 'string' ? body.message : `The mail provider answered ${status}`;
  return new MailProviderError(status, typeof body.name === 'string' ? body.name : `http_${status}`, message);
}

/** A success answer's JSON; one that is not JSON (a proxy's page, say) is the provider's failure, not the caller's. */
function answerOf<T>(status: number, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new MailProviderError(status, 'invalid_answer', `The mail provider answered ${status} with something other than JSON`);
  }
}

const headerOf = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value) ?? null;

export function createMailClient(options: MailClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/$/, '');
  const backoffMs = options.backoffMs ?? ((retry: number) => 250 * 4 ** (retry - 1));
  const now = options.now ?? Date.now;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  async function call<T>(
    apiKey: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let status: number;
      let retryAfter: string | null;
      let text: string;
      const limit = deadline(options.timeoutMs);
      try {
        const answer = await request(`${baseUrl}${path}`, {
          method: method as Dispatcher.HttpMethod,
          headers: {
            authorization: `Bearer ${apiKey}`,
            'user-agent': USER_AGENT,
            accept: 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: limit.signal,
        });
        status = answer.statusCode;
        retryAfter = headerOf(answer.headers['retry-after']);
        const tooLarge = () => new Error(`the answer was larger than ${MAX_ANSWER_BYTES} bytes`);
        text = (await readBounded(answer.body, MAX_ANSWER_BYTES, tooLarge)).toString('utf8');
      } catch (error) {
        if (attempt < options.retries) {
          await sleep(backoffMs(attempt + 1));
          continue;
        }
        const reason = limit.expired
          ? `no answer within ${options.timeoutMs / 1000} s`
          : String((error as Error)?.message ?? error);
        throw new MailProviderError(0, 'unreachable', `The mail provider could not be reached: ${reason}`);
      } finally {
        limit.clear();
      }
      // A redirect is the provider's answer too (its API does not redirect): refused as one, not followed.
      if (status >= 200 && status < 300) return answerOf<T>(status, text);
      if (isBusy(status) && attempt < options.retries) {
        const wait = retryAfterMs(retryAfter, now()) ?? backoffMs(attempt + 1);
        if (wait <= MAX_RETRY_AFTER_MS) {
          await sleep(wait);
          continue;
        }
      }
      throw errorOf(status, text);
    }
  }

  const segment = encodeURIComponent;

  /** The calls made with one org's key. */
  return (apiKey: string) => ({
    listDomains: async (): Promise<MailDomain[]> => (await call<{ data: MailDomain[] }>(apiKey, 'GET', '/domains')).data ?? [],

    /** Sends once per idempotency key (kept 24 h by the provider): a retried or resumed send is not sent twice. */
    sendEmail: (email: OutgoingEmail, idempotencyKey: string): Promise<{ id: string }> =>
      call(apiKey, 'POST', '/emails', email, { 'idempotency-key': idempotencyKey }),

    /** A sent email; its `message_id` may be missing for a moment after the send. */
    getEmail: (id: string): Promise<SentEmailRecord> => call(apiKey, 'GET', `/emails/${segment(id)}`),

    getReceivedEmail: (id: string): Promise<ReceivedEmail> => call(apiKey, 'GET', `/emails/receiving/${segment(id)}`),

    /** Every attachment of a received email (all pages, of up to `pageSize`), each with its download link. */
    async listReceivedAttachments(emailId: string, pageSize = 100): Promise<ReceivedAttachmentSummary[]> {
      const all: ReceivedAttachmentSummary[] = [];
      for (let after: string | undefined; ; ) {
        const query = `?limit=${pageSize}${after ? `&after=${segment(after)}` : ''}`;
        const page = await call<{ data: ReceivedAttachmentSummary[]; has_more?: boolean }>(
          apiKey,
          'GET',
          `/emails/receiving/${segment(emailId)}/attachments${query}`,
        );
        all.push(...page.data);
        if (!page.has_more || page.data.length === 0) return all;
        after = page.data.at(-1)!.id;
      }
    },

    getReceivedAttachment: (emailId: string, attachmentId: string): Promise<ReceivedAttachment> =>
      call(apiKey, 'GET', `/emails/receiving/${segment(emailId)}/attachments/${segment(attachmentId)}`),
  });
}

export type MailClient = ReturnType<typeof createMailClient>;
export type MailClientForKey = ReturnType<MailClient>;

/**
 * Downloads a received attachment from the provider's signed link (no API key: the link is the
 * credential), refusing more than `maxBytes` and any redirect. The link comes from the provider's own
 * answer. On undici's request, not fetch: fetch's web streams cost a model call's worth of CPU.
 */
export async function downloadAttachment(url: string, options: { maxBytes: number; timeoutMs: number }): Promise<Uint8Array> {
  if (!/^https?:\/\//i.test(url))
    throw new MailProviderError(0, 'invalid_download_url', 'The attachment link is not an http(s) URL');
  const limit = deadline(options.timeoutMs);
  try {
    return await download(url, options.maxBytes, limit.signal);
  } finally {
    limit.clear();
  }
}

async function download(url: string, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
  let answer: Dispatcher.ResponseData;
  try {
    answer = await request(url, { headers: { 'user-agent': USER_AGENT }, signal });
  } catch (error) {
    throw new MailProviderError(
      0,
      'unreachable',
      `The attachment could not be downloaded: ${(error as Error)?.message ?? error}`,
    );
  }
  const { statusCode, headers, body } = answer;
  if (statusCode < 200 || statusCode >= 300) {
    await body.dump();
    throw new MailProviderError(statusCode, `http_${statusCode}`, `The attachment download answered ${statusCode}`);
  }
  const tooLarge = () => new AttachmentTooLargeError(`The attachment is over the limit of ${maxBytes} bytes`);
  if (Number(headers['content-length'] ?? 0) > maxBytes) {
    body.destroy();
    throw tooLarge();
  }
  try {
    return await readBounded(body, maxBytes, tooLarge);
  } catch (error) {
    if (error instanceof AttachmentTooLargeError) throw error;
    throw new MailProviderError(0, 'unreachable', `The attachment download broke off: ${(error as Error)?.message ?? error}`);
  }
}

export class AttachmentTooLargeError extends Error {}
