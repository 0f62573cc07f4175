import { createHmac, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { sendJson, startLoopbackServer } from './http.ts';
import { type AnswerHold, answerHold } from './answer-hold.ts';

/** Where the account's webhook posts, and the secret it signs with (`whsec_` + base64). */
export interface FakeWebhook {
  url: string;
  secret: string;
}

/**
 * Posts a notification as Svix does for Resend: `svix-id`, `svix-timestamp` (Unix seconds) and
 * `svix-signature` (`v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`, keyed with the
 * base64 after `whsec_`). `tamper` lets a test break one part.
 */
export async function postSignedNotification(
  webhook: FakeWebhook,
  event: unknown,
  options: {
    svixId?: string;
    timestamp?: number;
    body?: string;
    /** Signs these bytes but sends `body`: an altered notification. */
    signedBody?: string;
    signature?: string;
    /** Entries put before the real one, as a secret rotation's other signature. */
    extraSignatures?: string[];
    headerPrefix?: 'svix' | 'webhook';
  } = {},
): Promise<Response> {
  const id = options.svixId ?? `msg_${randomBytes(12).toString('hex')}`;
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const body = options.body ?? JSON.stringify(event);
  const key = Buffer.from(webhook.secret.replace(/^whsec_/, ''), 'base64');
  const signed = `v1,${createHmac('sha256', key)
    .update(`${id}.${timestamp}.${options.signedBody ?? body}`)
    .digest('base64')}`;
  const signature = options.signature ?? [...(options.extraSignatures ?? []), signed].join(' ');
  const prefix = options.headerPrefix ?? 'svix';
  return fetch(webhook.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Svix-Webhooks/1.0',
      [`${prefix}-id`]: id,
      [`${prefix}-timestamp`]: String(timestamp),
      [`${prefix}-signature`]: signature,
    },
    body,
  });
}

export interface SentEmail {
  /** The provider's id, and the Message-ID it gave the email. */
  id: string;
  messageId: string;
  from: string;
  to: string[];
  subject: string;
  text?: string;
  html?: string;
  headers?: Record<string, string>;
  tags?: Array<{ name: string; value: string }>;
  attachments?: Array<{ filename: string; content: string; content_type?: string }>;
  idempotencyKey?: string;
}

/** An email the fake provider received, as a test describes it. */
export interface FakeInbound {
  from: string;
  to: string[];
  subject: string;
  text?: string;
  html?: string;
  headers?: Record<string, string>;
  attachments?: Array<{ filename: string; contentType: string; content: Buffer }>;
  cc?: string[];
  /** The provider's SPF, DKIM and DMARC verdicts (default: all pass). */
  authentication?: { spf?: string; dkim?: string; dmarc?: string };
}

export interface FakeDomain {
  name: string;
  status?: 'verified' | 'pending' | 'failed' | 'not_started';
  receiving?: boolean;
}

interface FakeAccount {
  /** A sending-only key: the provider refuses it everything but POST /emails. */
  restricted: boolean;
  domains: FakeDomain[];
}

/** Resend's error body. */
const refuse = (response: ServerResponse, status: number, name: string, message: string, headers: Record<string, string> = {}) =>
  sendJson(response, status, { statusCode: status, message, name }, headers);

/**
 * Plays the `mail` provider (Resend's API, shapes from its docs) on loopback: POST /emails and
 * GET /domains, per API key, with its error bodies; `failNextRequests` makes the next answers fail.
 */
export async function startFakeMailProvider(apiKey = 're_test_key') {
  const sent: SentEmail[] = [];
  // Indexes, so that a benchmark's thousands of emails cost the fake no more each than the first.
  const sentIndex = new Map<string, SentEmail>();
  const firstSentTo = new Map<string, SentEmail>();
  const waiters = new Map<string, Array<(email: SentEmail) => void>>();
  const accounts = new Map<string, FakeAccount>([[apiKey, { restricted: false, domains: [] }]]);
  const failures: Array<{ status: number; headers: Record<string, string> }> = [];
  const requests: Array<{ method: string; url: string; userAgent?: string }> = [];
  const byIdempotencyKey = new Map<string, { body: string; email: SentEmail }>();
  const received = new Map<string, FakeInbound & { id: string; messageId: string; createdAt: string; attachmentIds: string[] }>();
  type StoredAttachment = { emailId: string; filename: string; contentType: string; content: Buffer; token: string };
  const attachments = new Map<string, StoredAttachment>();
  const downloads = new Map<string, StoredAttachment>();
  const attachmentJson = (id: string) => {
    const attachment = attachments.get(id)!;
    return {
      id,
      filename: attachment.filename,
      content_type: attachment.contentType,
      content_disposition: 'attachment',
      content_id: null,
      size: attachment.content.length,
    };
  };
  /** An attachment with where to download it, as its own answer and the listing give it. */
  const linkedAttachmentJson = (id: string) => ({
    ...attachmentJson(id),
    download_url: `${server.url}/downloads/${attachments.get(id)!.token}`,
    expires_at: new Date(Date.now() + 3_600_000).toISOString(),
  });
  /** Answers held back until released: a test kills the server while it waits for them. */
  /** `failWith`: the status the held answer is, once released (a provider that sent, then answered 5xx). */
  const holds: Array<{ kind: 'send' | 'fetch-received'; answer: AnswerHold; failWith?: number }> = [];
  let downloadFailures = 0;
  let listingFailures = 0;
  const sendFailures: number[] = [];
  let unknownMessageIds = 0;
  const holdIf = async (kind: 'send' | 'fetch-received') => {
    const hold = holds.find((candidate) => candidate.kind === kind);
    if (!hold) return;
    holds.splice(holds.indexOf(hold), 1);
    await hold.answer.hold();
    return hold.failWith;
  };
  const server = await startLoopbackServer(async (request, response, body) => {
    // A signed download URL: no API key, as the provider's storage links.
    const download = request.url!.match(/^\/downloads\/([\w-]+)$/);
    if (request.method === 'GET' && download) {
      if (downloadFailures > 0) {
        downloadFailures--;
        return refuse(response, 410, 'gone', 'The download link has expired');
      }
      const attachment = downloads.get(download[1]!);
      if (!attachment) return refuse(response, 404, 'not_found', 'Download link not found');
      response.writeHead(200, { 'content-type': attachment.contentType, 'content-length': String(attachment.content.length) });
      return response.end(attachment.content);
    }
    requests.push({ method: request.method!, url: request.url!, userAgent: request.headers['user-agent'] });
    const authorization = request.headers.authorization;
    if (!authorization?.startsWith('Bearer '))
      return refuse(response, 401, 'missing_api_key', 'Missing API key in the authorization header');
    const account = accounts.get(authorization.slice('Bearer '.length));
    if (!account) return refuse(response, 403, 'invalid_api_key', 'API key is invalid');
    const failure = failures.shift();
    if (failure)
      return refuse(
        response,
        failure.status,
        failure.status === 429 ? 'rate_limit_exceeded' : 'application_error',
        'temporary failure',
        failure.headers,
      );
    if (request.method === 'GET' && request.url === '/domains') {
      if (account.restricted)
        return refuse(response, 401, 'restricted_api_key', 'This API key is restricted to only send emails');
      return sendJson(response, 200, {
        object: 'list',
        has_more: false,
        data: account.domains.map((domain, index) => ({
          id: `d-${index}`,
          name: domain.name,
          status: domain.status ?? 'verified',
          created_at: new Date(0).toISOString(),
          region: 'us-east-1',
          capabilities: { sending: 'enabled', receiving: domain.receiving === false ? 'disabled' : 'enabled' },
        })),
      });
    }
    const path = request.url!.split('?')[0]!;
    const receiving = path.match(/^\/emails\/receiving\/([\w-]+)(?:\/attachments(?:\/([\w-]+))?)?$/);
    if (request.method === 'GET' && receiving) {
      if (!receiving[2] && !request.url!.includes('/attachments')) await holdIf('fetch-received');
      if (account.restricted)
        return refuse(response, 401, 'restricted_api_key', 'This API key is restricted to only send emails');
      const email = received.get(receiving[1]!);
      if (!email) return refuse(response, 404, 'not_found', 'Email not found');
      if (receiving[2]) {
        const attachment = attachments.get(receiving[2]);
        if (!attachment || attachment.emailId !== email.id) return refuse(response, 404, 'not_found', 'Attachment not found');
        return sendJson(response, 200, { object: 'attachment', ...linkedAttachmentJson(receiving[2]) });
      }
      if (request.url!.includes('/attachments')) {
        if (listingFailures > 0) {
          listingFailures--;
          return refuse(response, 500, 'application_error', 'Something went wrong');
        }
        // Pages of `limit` (1 to 100; all of them without it), each attachment with its link, as documented.
        const query = new URL(request.url!, server.url).searchParams;
        const limit = query.has('limit') ? Number(query.get('limit')) : Math.max(1, email.attachmentIds.length);
        if (!Number.isInteger(limit) || limit < 1 || (query.has('limit') && limit > 100))
          return refuse(response, 422, 'validation_error', 'The `limit` must be between 1 and 100');
        const after = query.get('after');
        const start = after ? email.attachmentIds.indexOf(after) + 1 : 0;
        const page = email.attachmentIds.slice(start, start + limit);
        return sendJson(response, 200, {
          object: 'list',
          has_more: start + limit < email.attachmentIds.length,
          data: page.map(linkedAttachmentJson),
        });
      }
      return sendJson(response, 200, {
        object: 'email',
        id: email.id,
        to: email.to,
        from: email.from,
        created_at: email.createdAt,
        subject: email.subject,
        html: email.html ?? null,
        text: email.text ?? null,
        headers: email.headers ?? {},
        bcc: [],
        cc: email.cc ?? [],
        reply_to: [],
        received_for: email.to,
        authentication: { spf: 'pass', dkim: 'pass', dmarc: 'pass', ...email.authentication },
        message_id: email.messageId,
        attachments: email.attachmentIds.map(attachmentJson),
      });
    }
    const sentById = path.match(/^\/emails\/([\w-]+)$/);
    if (request.method === 'GET' && sentById) {
      const email = sentIndex.get(sentById[1]!);
      if (!email) return refuse(response, 404, 'not_found', 'Email not found');
      const known = unknownMessageIds === 0;
      if (!known) unknownMessageIds--;
      return sendJson(response, 200, {
        object: 'email',
        id: email.id,
        // Just after a send the provider may not know the Message-ID yet.
        message_id: known ? email.messageId : null,
        last_event: 'sent',
        to: email.to,
        from: email.from,
        subject: email.subject,
      });
    }
    if (request.method !== 'POST' || path !== '/emails') return refuse(response, 404, 'not_found', 'Route not found');
    const sendFailure = sendFailures.shift();
    if (sendFailure) return refuse(response, sendFailure, 'application_error', 'temporary failure');
    const idempotencyKey = request.headers['idempotency-key'] as string | undefined;
    const earlier = idempotencyKey ? byIdempotencyKey.get(idempotencyKey) : undefined;
    if (earlier) {
      if (earlier.body !== body)
        return refuse(response, 409, 'invalid_idempotent_request', 'Same idempotency key used with a different request payload');
      return sendJson(response, 200, { id: earlier.email.id });
    }
    const id = crypto.randomUUID();
    const email: SentEmail = {
      ...(JSON.parse(body) as Omit<SentEmail, 'id' | 'messageId'>),
      id,
      messageId: `<${id}@email.fake-provider.test>`,
      idempotencyKey,
    };
    if (idempotencyKey) byIdempotencyKey.set(idempotencyKey, { body, email });
    sent.push(email);
    sentIndex.set(id, email);
    for (const recipient of Array.isArray(email.to) ? email.to : [email.to]) {
      if (!firstSentTo.has(recipient)) firstSentTo.set(recipient, email);
      for (const resolve of waiters.get(recipient) ?? []) resolve(email);
      waiters.delete(recipient);
    }
    // Sent, but the answer may be held: the sender cannot know that it was sent.
    const failWith = await holdIf('send');
    if (failWith) return refuse(response, failWith, 'application_error', 'An unexpected error occurred');
    if (!response.destroyed) sendJson(response, 200, { id });
  });
  return {
    url: server.url,
    apiKey,
    sent,
    requests,
    /** An email the provider received (as its inbound would), with attachments to download; returns its id. */
    receive(email: FakeInbound): { id: string; messageId: string } {
      const id = crypto.randomUUID();
      const attachmentIds = (email.attachments ?? []).map((attachment) => {
        const attachmentId = crypto.randomUUID();
        const stored = { emailId: id, ...attachment, token: crypto.randomUUID() };
        attachments.set(attachmentId, stored);
        downloads.set(stored.token, stored);
        return attachmentId;
      });
      // A received email's message_id is its own Message-ID header (one the sending server made if it had none).
      const messageId = email.headers?.['Message-ID'] ?? `<${id}@inbound.fake-provider.test>`;
      received.set(id, { ...email, id, messageId, createdAt: new Date().toISOString(), attachmentIds });
      return { id, messageId };
    },
    /** The `email.received` notification of a received email, as the provider posts it (no body, no headers). */
    receivedEvent(emailId: string) {
      const email = received.get(emailId)!;
      return {
        type: 'email.received',
        created_at: email.createdAt,
        data: {
          email_id: email.id,
          created_at: email.createdAt,
          from: email.from,
          to: email.to,
          cc: email.cc ?? [],
          bcc: [],
          received_for: email.to,
          message_id: email.messageId,
          subject: email.subject,
          attachments: email.attachmentIds.map(attachmentJson),
        },
      };
    },
    /** A notification about a sent email (`email.sent`, `email.bounced` with `extra.bounce`, ...), with the tags it was sent with. */
    sentEvent(emailId: string, type: string, extra: Record<string, unknown> = {}) {
      const email = sentIndex.get(emailId)!;
      const createdAt = new Date().toISOString();
      return {
        type,
        created_at: createdAt,
        data: {
          email_id: email.id,
          created_at: createdAt,
          from: email.from,
          to: Array.isArray(email.to) ? email.to : [email.to],
          subject: email.subject,
          message_id: email.messageId,
          tags: Object.fromEntries((email.tags ?? []).map((tag) => [tag.name, tag.value])),
          ...extra,
        },
      };
    },
    /** The next `count` lookups of a sent email answer it without its Message-ID (not known yet). */
    withholdMessageIds: (count: number) => {
      unknownMessageIds += count;
    },
    /** The next `count` listings of a received email's attachments answer 500. */
    failNextListings: (count: number) => {
      listingFailures += count;
    },
    /** The next `count` attachment downloads answer 410 (an expired link). */
    failNextDownloads: (count: number) => {
      downloadFailures += count;
    },
    /**
     * Holds the next answer of a kind (a send, after the email is sent; a received email's fetch)
     * until `release` is called; `held` resolves once a request is being held.
     */
    holdNext(kind: 'send' | 'fetch-received') {
      const answer = answerHold();
      const hold: (typeof holds)[number] = { kind, answer };
      holds.push(hold);
      return {
        ...answer.control,
        /** Releases the held answer as a failure of `status` instead. */
        releaseFailing: (status: number) => {
          hold.failWith = status;
          answer.control.release();
        },
      };
    },
    /** Another API key of the account, with its domains (or a sending-only key). */
    addKey(key: string, account: { restricted?: boolean; domains?: FakeDomain[] } = {}) {
      accounts.set(key, { restricted: account.restricted ?? false, domains: account.domains ?? [] });
    },
    /** The next `count` requests fail with `status` (500 by default; 429 with these headers, e.g. retry-after). */
    failNextRequests: (count: number, status = 500, headers: Record<string, string> = {}) => {
      for (let index = 0; index < count; index++) failures.push({ status, headers });
    },
    /** The next `count` sends are refused with `status` before anything is sent (other requests are answered). */
    failNextSends: (count: number, status = 503) => {
      for (let index = 0; index < count; index++) sendFailures.push(status);
    },
    /** The first email to `to` (already sent or yet to come). */
    waitFor(to: string, timeoutMs = 10_000): Promise<SentEmail> {
      const already = firstSentTo.get(to);
      if (already) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`No email to ${to} within ${timeoutMs} ms`)), timeoutMs);
        waiters.set(to, [
          ...(waiters.get(to) ?? []),
          (email) => {
            clearTimeout(timer);
            resolve(email);
          },
        ]);
      });
    },
    close: server.close,
  };
}
