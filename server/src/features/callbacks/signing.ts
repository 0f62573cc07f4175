import { signStandardWebhook } from '../../lib/standard-webhooks.ts';

/**
 * Standard Webhooks headers for one attempt: `webhook-*` (what the standardwebhooks libraries read)
 * and the same values under the `wh-*` names our callback receivers read. With a rotation in progress, the signature
 * header carries one `v1,` entry per secret; a receiver accepts if any matches. Signed with node:crypto
 * (the standardwebhooks package hashes in JavaScript: 8.5% of the dispatcher's busy CPU in bench:callbacks).
 */
export function signedHeaders(messageId: string, at: Date, body: string, secrets: readonly string[]): Record<string, string> {
  const seconds = Math.floor(at.getTime() / 1000);
  const timestamp = String(seconds);
  const signature = secrets.map((secret) => signStandardWebhook(secret, messageId, seconds, body)).join(' ');
  return {
    'webhook-id': messageId,
    'webhook-timestamp': timestamp,
    'webhook-signature': signature,
    'wh-id': messageId,
    'wh-timestamp': timestamp,
    'wh-signature': signature,
  };
}

/** Signing secrets by their encrypted form: each decrypted once, not once per attempt. */
export function createSecretCache(decrypt: (encrypted: string) => string, capacity = 10_000) {
  const cache = new Map<string, string>();
  return (encrypted: string): string => {
    let secret = cache.get(encrypted);
    if (secret === undefined) {
      if (cache.size >= capacity) cache.delete(cache.keys().next().value!);
      secret = decrypt(encrypted);
      cache.set(encrypted, secret);
    }
    return secret;
  };
}
