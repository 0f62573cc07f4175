import { createCipheriv, createDecipheriv, hash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** An opaque random token of `bytes` bytes (default 256 bits), base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** `whsec_` + 24 random bytes, base64: the Standard Webhooks secret format (webhooks and callback endpoints). */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
/** After a rotation the previous signing secret stays valid this long, so that the other side can switch over. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

/** One-shot SHA-256 (`crypto.hash`: about a third of `createHash`'s time for a session token). */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/**
 * A UUID named by `key`: its SHA-256, laid out as an RFC 9562 version 8 UUID. The same key gives the
 * same id, so a retried write of a row keyed this way finds the row it wrote before.
 */
export function uuidFromKey(key: string): string {
  const bytes = hash('sha256', key, 'buffer').subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Compares two secrets in time independent of where they differ and of their lengths. */
export function timingSafeEqualString(a: string, b: string): boolean {
  const left = hash('sha256', a, 'buffer');
  const right = hash('sha256', b, 'buffer');
  return timingSafeEqual(left, right);
}

const BOX_VERSION = 'v1';
const BOX_INFO = 'agent-platform/secret-box/v1';

/**
 * AES-256-GCM encryption of secrets at rest. Every value gets its own random 32-byte salt (the key
 * is derived from the master key with HKDF-SHA256 and that salt) and a random 16-byte IV.
 * Format: `v1.<salt>.<iv>.<tag>.<ciphertext>`, each part base64url.
 */
export interface SecretBox {
  encrypt(plaintext: string): string;
  decrypt(sealed: string): string;
}

/** Sealed values opened lately: a key derivation per use showed in the email profile (keys are read per request). */
const OPENED_CACHE_SIZE = 1000;

export function createSecretBox(masterKey: string): SecretBox {
  const ikm = Buffer.from(masterKey, 'utf8');
  const deriveKey = (salt: Buffer) => Buffer.from(hkdfSync('sha256', ikm, salt, BOX_INFO, 32));
  const opened = new Map<string, string>();
  return {
    encrypt(plaintext) {
      const salt = randomBytes(32);
      const iv = randomBytes(16);
      const cipher = createCipheriv('aes-256-gcm', deriveKey(salt), iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const parts = [salt, iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'));
      return [BOX_VERSION, ...parts].join('.');
    },
    decrypt(sealed) {
      const known = opened.get(sealed);
      if (known !== undefined) return known;
      const [version, salt, iv, tag, ciphertext] = sealed.split('.');
      if (version !== BOX_VERSION || !salt || !iv || !tag || ciphertext === undefined) {
        throw new Error('Malformed sealed value');
      }
      const decipher = createDecipheriv('aes-256-gcm', deriveKey(Buffer.from(salt, 'base64url')), Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      if (opened.size >= OPENED_CACHE_SIZE) opened.delete(opened.keys().next().value!);
      opened.set(sealed, plaintext);
      return plaintext;
    },
  };
}
