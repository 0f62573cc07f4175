import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/** The Standard Webhooks key: the base64 after `whsec_`. */
export function secretKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  if (key.length === 0) throw new TypeError('The secret is empty or not base64 (expected whsec_...)');
  return key;
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function standardSignature(key: Buffer, id: string, timestamp: number, body: string | Uint8Array): string {
  const hmac = createHmac('sha256', key).update(`${id}.${timestamp}.`);
  hmac.update(body);
  return `v1,${hmac.digest('base64')}`;
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export const newMessageId = () => `msg_${randomUUID().replaceAll('-', '')}`;

/** `v1=<hex HMAC-SHA256 of "timestamp.body">`, keyed with the webhook secret as it is (scheme hmac_sha256). */
export function hmacSha256Signature(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}
