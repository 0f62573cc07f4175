import { createHmac, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { VerificationScheme } from '../../db/schema.ts';
import { timingSafeEqualString } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { anySignatureMatches, checkTimestamp, hmacKey, signStandardWebhook } from '../../lib/standard-webhooks.ts';

export interface Verified {
  /** The sender's message id (`wh`), for replay protection. */
  messageId?: string;
}

const header = (headers: IncomingHttpHeaders, ...names: string[]): string | undefined => {
  for (const name of names) {
    const value = headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first) return first;
  }
  return undefined;
};

/**
 * Checks the sender of one request by the webhook's scheme. `secrets` holds the current
 * secret and, during a rotation's grace period, the previous one. Throws a 401 AppError.
 */
export function verifySender(
  scheme: VerificationScheme,
  secrets: string[],
  headers: IncomingHttpHeaders,
  rawBody: Buffer,
  nowSeconds: number,
): Verified {
  switch (scheme) {
    case 'none':
      return {};
    case 'wh': {
      const id = header(headers, 'wh-id', 'webhook-id');
      const timestamp = header(headers, 'wh-timestamp', 'webhook-timestamp');
      const signature = header(headers, 'wh-signature', 'webhook-signature');
      if (!id || !timestamp || !signature)
        throw new AppError(
          'signature_missing',
          'Missing wh-id, wh-timestamp or wh-signature header (or their webhook-* equivalents)',
        );
      const ts = checkTimestamp(timestamp, nowSeconds);
      const expected = secrets.map((secret) => signStandardWebhook(secret, id, ts, rawBody).slice(3));
      if (!anySignatureMatches(expected, signature))
        throw new AppError('signature_invalid', 'No signature in wh-signature matches the webhook secret');
      return { messageId: id };
    }
    case 'hmac_sha256': {
      const timestamp = header(headers, 'x-webhook-timestamp');
      const signature = header(headers, 'x-webhook-signature');
      if (!timestamp || !signature)
        throw new AppError('signature_missing', 'Missing x-webhook-timestamp or x-webhook-signature header');
      const ts = checkTimestamp(timestamp, nowSeconds);
      const given = signature.startsWith('v1=') ? signature.slice(3) : '';
      const matches = secrets.map((secret) => {
        const expected = createHmac(
          'sha256',
          hmacKey(`hmac:${secret}`, () => Buffer.from(secret)),
        )
          .update(`${ts}.`)
          .update(rawBody)
          .digest('hex');
        return timingSafeEqualString(given.toLowerCase(), expected);
      });
      if (!matches.includes(true))
        throw new AppError(
          'signature_invalid',
          'x-webhook-signature does not match: expected v1=<hex HMAC-SHA256 of "<timestamp>.<raw body>">',
        );
      // The scheme has no message id: the signature, unique to (timestamp, body), stands for one,
      // so that the same request sent again within the tolerance is answered once, not acted on twice.
      return { messageId: `hmac_sha256:${ts}:${given.toLowerCase()}` };
    }
    case 'shared_token': {
      // Either credential counts: an Authorization header of some proxy's does not hide x-webhook-token.
      const bearer = header(headers, 'authorization')?.match(/^Bearer\s+(\S+)/i)?.[1];
      const tokens = [bearer, header(headers, 'x-webhook-token')].filter((token): token is string => !!token);
      if (tokens.length === 0)
        throw new AppError('signature_missing', 'Missing Authorization: Bearer <token> or x-webhook-token header');
      const matches = tokens.flatMap((token) => secrets.map((secret) => timingSafeEqualString(token, secret)));
      if (!matches.includes(true)) throw new AppError('signature_invalid', 'The token does not match the webhook secret');
      return {};
    }
  }
}

/** The headers a sender attaches for a scheme (Send Test, the SDK's tests and the benchmarks use it). */
export function signingHeaders(
  scheme: VerificationScheme,
  secret: string,
  body: string,
  options: { nowSeconds: number; messageId?: string },
): Record<string, string> {
  const timestamp = options.nowSeconds;
  switch (scheme) {
    case 'wh': {
      const id = options.messageId ?? `msg_${randomUUID().replaceAll('-', '')}`;
      return { 'wh-id': id, 'wh-timestamp': String(timestamp), 'wh-signature': signStandardWebhook(secret, id, timestamp, body) };
    }
    case 'hmac_sha256':
      return {
        'x-webhook-timestamp': String(timestamp),
        'x-webhook-signature': `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`,
      };
    case 'shared_token':
      return { authorization: `Bearer ${secret}` };
    case 'none':
      return {};
  }
}

/**
 * Headers kept in the ledger: a name that speaks of a credential is redacted, whatever its exact
 * spelling (x-auth, x-access-key, api_key, x-session-id, x-credentials...), except the few below
 * whose values are known not to be secrets.
 */
const SENSITIVE_HEADER = /auth|key|token|secret|session|cookie|signature|passw|credential/i;
const SHOWN_IN_CLEAR = new Set(['idempotency-key', 'x-idempotency-key', 'keep-alive']);

export function redactHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const redacted = SENSITIVE_HEADER.test(name) && !SHOWN_IN_CLEAR.has(name);
    kept[name] = redacted ? '[REDACTED]' : Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}
