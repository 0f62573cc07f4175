import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { AppError } from './errors.ts';

/**
 * Standard Webhooks (the `wh` scheme of action webhooks; Svix's signatures, under `svix-*` names, are
 * the same): `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` with the secret's bytes (the
 * base64 after `whsec_`), and a timestamp within 5 minutes either way.
 */

/** Both directions of the tolerance (too old and too new), in seconds. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

/** The timestamp header as Unix seconds, if within the tolerance of `nowSeconds`; else a 401. */
export function checkTimestamp(raw: string, nowSeconds: number): number {
  if (!/^\d{1,12}$/.test(raw)) throw new AppError('timestamp_out_of_tolerance', 'The timestamp header is not Unix seconds');
  const timestamp = Number(raw);
  if (Math.abs(nowSeconds - timestamp) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw new AppError(
      'timestamp_out_of_tolerance',
      `The timestamp is more than ${TIMESTAMP_TOLERANCE_SECONDS} seconds from the server's time`,
    );
  }
  return timestamp;
}

/**
 * HMAC keys as KeyObjects, built once per secret: creating one from bytes on every request showed
 * in the ingest profile. Bounded; secrets of deleted webhooks age out.
 */
const keyObjects = new Map<string, KeyObject>();
export function hmacKey(cacheKey: string, bytes: () => Buffer): KeyObject {
  let key = keyObjects.get(cacheKey);
  if (!key) {
    if (keyObjects.size >= 10_000) keyObjects.delete(keyObjects.keys().next().value!);
    key = createSecretKey(bytes());
    keyObjects.set(cacheKey, key);
  }
  return key;
}

/** The HMAC key of a `whsec_` secret: the base64 after the prefix. */
export function standardWebhooksKey(secret: string): KeyObject {
  return hmacKey(`wh:${secret}`, () => Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'));
}

/** Standard Webhooks signature of `${id}.${timestamp}.${body}`, on the exact bytes received. */
export function signStandardWebhook(secret: string, id: string, timestamp: number, body: Buffer | string): string {
  const mac = createHmac('sha256', standardWebhooksKey(secret));
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

/** Whether any `v1,` entry of a signature header is one of `expected` (signatures without their `v1,`). */
export function anySignatureMatches(expected: string[], signatureHeader: string): boolean {
  let matched = false;
  // Every candidate is compared (no early exit), so timing does not tell which one matched.
  for (const entry of signatureHeader.split(' ')) {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || !signature) continue;
    for (const candidate of expected) {
      const a = Buffer.from(signature);
      const b = Buffer.from(candidate);
      if (a.length === b.length && timingSafeEqual(a, b)) matched = true;
    }
  }
  return matched;
}
