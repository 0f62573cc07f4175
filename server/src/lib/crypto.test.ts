import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSecretBox, randomToken, sha256Hex, timingSafeEqualString, uuidFromKey } from './crypto.ts';

describe('secret box (AES-256-GCM)', () => {
  const box = createSecretBox('a-master-key-of-at-least-32-characters');

  it('round-trips and never repeats a ciphertext', () => {
    const sealed = box.encrypt('external token');
    expect(box.decrypt(sealed)).toBe('external token');
    expect(box.encrypt('external token')).not.toBe(sealed);
    expect(sealed).not.toContain('external');
  });

  it('uses a 32-byte salt and a 16-byte IV per value', () => {
    const [version, salt, iv, tag] = box.encrypt('x').split('.');
    expect(version).toBe('v1');
    expect(Buffer.from(salt!, 'base64url')).toHaveLength(32);
    expect(Buffer.from(iv!, 'base64url')).toHaveLength(16);
    expect(Buffer.from(tag!, 'base64url')).toHaveLength(16);
  });

  it('refuses a tampered value and another master key', () => {
    const sealed = box.encrypt('secret');
    const parts = sealed.split('.');
    const ciphertext = Buffer.from(parts[4]!, 'base64url');
    ciphertext[0] = ciphertext[0]! ^ 1;
    parts[4] = ciphertext.toString('base64url');
    expect(() => box.decrypt(parts.join('.'))).toThrow();
    expect(() => createSecretBox('another-master-key-of-32-characters!!').decrypt(sealed)).toThrow();
    expect(() => box.decrypt('garbage')).toThrow(/Malformed/);
  });
});

describe('tokens and comparisons', () => {
  it('makes 256-bit random tokens', () => {
    const token = randomToken();
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(randomToken()).not.toBe(token);
  });

  it('compares strings of any length', () => {
    expect(timingSafeEqualString('abc', 'abc')).toBe(true);
    expect(timingSafeEqualString('abc', 'abd')).toBe(false);
    expect(timingSafeEqualString('abc', 'abcd')).toBe(false);
    expect(timingSafeEqualString('', '')).toBe(true);
  });

  it('hashes tokens to the SHA-256 hex digest of their UTF-8 bytes, as sessions stored before were hashed', () => {
    // FIPS 180-2's test vector, the empty string's, and a non-ASCII token (UTF-8 encoded, not Latin-1).
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('é')).toBe(createHash('sha256').update(Buffer.from('é', 'utf8')).digest('hex'));
  });

  it('names a UUID by a key: its SHA-256 with version 8 and the RFC 9562 variant', () => {
    // SHA-256("abc") is ba7816bf 8f01cfea 414140de ...: byte 6 (cf) becomes 8f, byte 8 (41) becomes 81.
    expect(uuidFromKey('abc')).toBe('ba7816bf-8f01-8fea-8141-40de5dae2223');
    expect(uuidFromKey('abc')).toBe(uuidFromKey('abc'));
    expect(uuidFromKey('abd')).not.toBe(uuidFromKey('abc'));
    expect(z.uuid().safeParse(uuidFromKey('any key')).success).toBe(true);
  });
});
