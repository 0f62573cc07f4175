import bcrypt from 'bcrypt';

/** The spec's adaptive hash cost (section 8). */
export const PASSWORD_HASH_ROUNDS = 12;
/** bcrypt reads only the first 72 bytes; longer passwords are refused rather than silently cut. */
export const PASSWORD_MAX_BYTES = 72;
export const PASSWORD_MIN_LENGTH = 8;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, hash: string | null): Promise<boolean>;
}

/**
 * bcrypt's native binding hashes on the libuv pool, so the event loop stays free. `verify` against a
 * missing hash still spends one full comparison (against a dummy hash), so an unknown account and a
 * wrong password take the same time.
 */
export function createPasswordHasher(rounds = PASSWORD_HASH_ROUNDS): PasswordHasher {
  let dummyHash: Promise<string> | undefined;
  const getDummyHash = () => (dummyHash ??= bcrypt.hash('dummy password for timing', rounds));
  void getDummyHash();
  return {
    hash: (password) => bcrypt.hash(password, rounds),
    async verify(password, hash) {
      if (hash) return bcrypt.compare(password, hash);
      await bcrypt.compare(password, await getDummyHash());
      return false;
    },
  };
}
