import type { CallbackEvent } from './events.js';
import { safeEqual, secretKey, standardSignature } from './signing.js';

export type VerificationErrorCode =
  | 'missing_headers'
  | 'invalid_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'invalid_signature'
  | 'invalid_payload';

/** A callback that failed verification: answer it 400 (or 401) and do not act on it. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly code: VerificationErrorCode;
  constructor(code: VerificationErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Request headers as Node (IncomingHttpHeaders), Express, Fastify or fetch (Headers) give them. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far the timestamp may be from now, either way. Default 300 s, as in every Standard Webhooks library. */
  toleranceSeconds?: number;
  /** Now, in Unix seconds (for tests). */
  nowSeconds?: number;
}

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}

const text = (body: string | Uint8Array) =>
  typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');

/**
 * Throws a WebhookVerificationError unless the body is signed with the secret (Standard Webhooks:
 * `webhook-id`/`-timestamp`/`-signature`, or the same under `wh-*`) within the tolerance. Pass the
 * raw body exactly as received: a re-serialized JSON body does not verify.
 */
export function verifyOrThrow(
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  secret: string,
  options: VerifyOptions = {},
): void {
  const id = header(headers, 'webhook-id') ?? header(headers, 'wh-id');
  const timestamp = header(headers, 'webhook-timestamp') ?? header(headers, 'wh-timestamp');
  const signatures = header(headers, 'webhook-signature') ?? header(headers, 'wh-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError(
      'missing_headers',
      'Missing webhook-id, webhook-timestamp or webhook-signature (or their wh-* forms)',
    );
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('invalid_timestamp', 'The timestamp is not Unix seconds');
  const seconds = Number(timestamp);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (seconds < now - tolerance) throw new WebhookVerificationError('timestamp_too_old', 'The message is too old');
  if (seconds > now + tolerance) throw new WebhookVerificationError('timestamp_too_new', 'The message is from the future');
  const expected = standardSignature(secretKey(secret), id, seconds, rawBody);
  // During a secret rotation the header carries one signature per secret: any match will do.
  const matches = signatures
    .split(' ')
    .filter((candidate) => candidate.startsWith('v1,'))
    .some((candidate) => safeEqual(candidate, expected));
  if (!matches) throw new WebhookVerificationError('invalid_signature', 'No signature matches the secret');
}

/** Whether the callback verifies (see verifyOrThrow). */
export function verify(rawBody: string | Uint8Array, headers: HeadersLike, secret: string, options: VerifyOptions = {}): boolean {
  try {
    verifyOrThrow(rawBody, headers, secret, options);
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
}

/** Verifies the callback and returns its event, typed by `type`; throws WebhookVerificationError otherwise. */
export function constructEvent(
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  secret: string,
  options: VerifyOptions = {},
): CallbackEvent {
  verifyOrThrow(rawBody, headers, secret, options);
  let event: unknown;
  try {
    event = JSON.parse(text(rawBody));
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'The body is not JSON');
  }
  const shaped = event as Partial<CallbackEvent> | null;
  if (!shaped || typeof shaped.type !== 'string' || typeof shaped.data !== 'object' || shaped.data === null) {
    throw new WebhookVerificationError('invalid_payload', 'The body is not a callback event');
  }
  return shaped as CallbackEvent;
}
