import type { ActionWebhookPayload } from './events.js';
import { hmacSha256Signature, newMessageId, secretKey, standardSignature } from './signing.js';

export type VerificationScheme = 'wh' | 'hmac_sha256' | 'shared_token' | 'none';

export interface ClientOptions {
  /** The service's origin, e.g. https://api.example.com */
  baseUrl: string;
  /** The organization slug or ID. */
  org: string;
  webhookIdentifier: string;
  /** The webhook's secret (whsec_...); not needed for `none`. */
  secret?: string;
  /** Must match the webhook's verification scheme. Default `wh`. */
  scheme?: VerificationScheme;
  /** Retries of 429, 5xx and network errors. Default 3. */
  maxRetries?: number;
  /** Per attempt. Default 30 s. */
  timeoutMs?: number;
  /** The longest wait between attempts, whatever Retry-After says. Default 60 s. */
  maxRetryDelayMs?: number;
  fetch?: typeof fetch;
}

export type SendResult =
  | { outcome: 'created'; actionId: string }
  | { outcome: 'alreadyExists'; actionId: string }
  | { outcome: 'buffered'; eventId: string; reason: string }
  | { outcome: 'skipped'; eventId: string; reason: string };

/** An answer that is not a success, after any retries: `status` and the service's error `code`. */
export class AgentPlatformError extends Error {
  override name = 'AgentPlatformError';
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const retryable = (status: number) => status === 429 || status >= 500;

function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Posts events to one action webhook, signed for its scheme. */
export class AgentPlatformClient {
  readonly #options: Required<Omit<ClientOptions, 'secret' | 'fetch'>> & Pick<ClientOptions, 'secret'> & { fetch: typeof fetch };
  readonly #url: string;

  constructor(options: ClientOptions) {
    const scheme = options.scheme ?? 'wh';
    if (scheme !== 'none' && !options.secret) throw new TypeError(`The ${scheme} scheme needs the webhook's secret`);
    if (scheme === 'wh') secretKey(options.secret!);
    this.#options = {
      scheme,
      maxRetries: 3,
      timeoutMs: 30_000,
      maxRetryDelayMs: 60_000,
      ...options,
      fetch: options.fetch ?? globalThis.fetch,
    };
    const path = `/webhooks/actions/${encodeURIComponent(options.org)}/${encodeURIComponent(options.webhookIdentifier)}`;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}${path}`;
  }

  #headers(body: string, messageId: string): Record<string, string> {
    const { scheme, secret } = this.#options;
    const timestamp = Math.floor(Date.now() / 1000);
    switch (scheme) {
      case 'wh':
        return {
          'wh-id': messageId,
          'wh-timestamp': String(timestamp),
          'wh-signature': standardSignature(secretKey(secret!), messageId, timestamp, body),
        };
      case 'hmac_sha256':
        return { 'x-webhook-timestamp': String(timestamp), 'x-webhook-signature': hmacSha256Signature(secret!, timestamp, body) };
      case 'shared_token':
        return { authorization: `Bearer ${secret}` };
      case 'none':
        return {};
    }
  }

  /**
   * Sends one event. 429, 5xx and network errors are retried with backoff (honouring Retry-After):
   * safe, because every attempt carries the same message id and the same externalId (a UUID is
   * filled in when the payload has none), so the service creates one action however many attempts
   * arrive, and answers a retry of an event it took with its first answer. Each attempt is signed
   * afresh (new timestamp), as Standard Webhooks senders do.
   */
  async send(payload: ActionWebhookPayload): Promise<SendResult> {
    const body = JSON.stringify({ ...payload, externalId: payload.externalId ?? crypto.randomUUID() });
    const messageId = newMessageId();
    const { maxRetries, timeoutMs, maxRetryDelayMs } = this.#options;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.#options.fetch(this.#url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'agent-platform-sdk/0.1',
            ...this.#headers(body, messageId),
          },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        if (attempt >= maxRetries) throw error;
        await sleep(backoff(attempt, maxRetryDelayMs));
        continue;
      }
      if (response.ok) return toResult(await response.json());
      if (retryable(response.status) && attempt < maxRetries) {
        await response.body?.cancel();
        await sleep(
          Math.min(retryAfterMs(response.headers.get('retry-after')) ?? backoff(attempt, maxRetryDelayMs), maxRetryDelayMs),
        );
        continue;
      }
      const error = (await response.json().catch(() => ({}))) as { error?: string; code?: string };
      throw new AgentPlatformError(response.status, error.code ?? 'unknown', error.error ?? `HTTP ${response.status}`);
    }
  }
}

/** 0.5 s, 1 s, 2 s, ... with full jitter, capped. */
const backoff = (attempt: number, capMs: number) => Math.min(capMs, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function toResult(body: {
  actionId?: string;
  alreadyExists?: boolean;
  buffered?: boolean;
  skipped?: boolean;
  eventId?: string;
  reason?: string;
}): SendResult {
  if (body.actionId)
    return body.alreadyExists
      ? { outcome: 'alreadyExists', actionId: body.actionId }
      : { outcome: 'created', actionId: body.actionId };
  if (body.buffered) return { outcome: 'buffered', eventId: body.eventId!, reason: body.reason! };
  return { outcome: 'skipped', eventId: body.eventId!, reason: body.reason! };
}
