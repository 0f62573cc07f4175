import { Webhook } from 'standardwebhooks';

/**
 * Standard Webhooks headers for one attempt: `webhook-*` (what the standardwebhooks libraries read)
 * and the same values under the `wh-*` names our callback receivers read. With a rotation in progress, the signature
 * header carries one `v1,` entry per secret; a receiver accepts if any matches.
 */
export function signedHeaders(messageId: string, at: Date, body: string, signers: readonly Webhook[]): Record<string, string> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signature = signers.map((signer) => signer.sign(messageId, at, body)).join(' ');
  return {
    'webhook-id': messageId,
    'webhook-timestamp': timestamp,
    'webhook-signature': signature,
    'wh-id': messageId,
    'wh-timestamp': timestamp,
    'wh-signature': signature,
  };
}

/** Signers by encrypted secret: decrypting and decoding once per secret, not once per attempt. */
export function createSignerCache(decrypt: (encrypted: string) => string, capacity = 10_000) {
  const cache = new Map<string, Webhook>();
  return (encrypted: string): Webhook => {
    let signer = cache.get(encrypted);
    if (!signer) {
      if (cache.size >= capacity) cache.delete(cache.keys().next().value!);
      signer = new Webhook(decrypt(encrypted));
      cache.set(encrypted, signer);
    }
    return signer;
  };
}
