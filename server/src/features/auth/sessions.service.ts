import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB, SessionRow, UserRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { BUS_TOPICS, INVALIDATE_ALL, type ProcessBus } from '../../lib/process-bus.ts';
import { sessionsRepo } from './sessions.repo.ts';

/** Spec 2.2: 30 days. */
export const SESSION_LIFETIME_SECONDS = 30 * 24 * 60 * 60;

export interface AuthenticatedSession {
  user: UserRow;
  session: SessionRow;
}

const CACHE_MAX_ENTRIES = 50_000;

/**
 * Sessions are opaque 256-bit tokens; only their SHA-256 is stored, so a database leak yields no
 * usable session. Looking up by the hash of the presented token is itself the comparison: no
 * secret is compared byte by byte in application code.
 *
 * Valid sessions are cached in memory for `cacheTtlMs` (the check runs on every request). Logout
 * and revocation remove entries at once, in every process through the invalidation bus; a lookup
 * that raced with a revocation is not cached. The TTL bounds how long a changed role takes effect.
 */
export function createSessionsService(deps: { db: Kysely<DB>; clock: Clock; bus: ProcessBus; cacheTtlMs: number }) {
  const cache = new Map<string, { value: AuthenticatedSession; freshUntil: number }>();
  let generation = 0;
  deps.bus.subscribe(BUS_TOPICS.session, (key) => {
    generation++;
    if (key === INVALIDATE_ALL) cache.clear();
    else if (key.startsWith('user:')) {
      const userId = key.slice(5);
      for (const [hash, entry] of cache) if (entry.value.user.id === userId) cache.delete(hash);
    } else cache.delete(key);
  });

  async function lookup(tokenHash: string): Promise<AuthenticatedSession | undefined> {
    const now = deps.clock.now();
    const cached = cache.get(tokenHash);
    if (cached && cached.freshUntil > now.getTime()) {
      return cached.value.session.expiresAt > now ? cached.value : undefined;
    }
    const startedAt = generation;
    const found = await sessionsRepo.findValidByTokenHash(deps.db, tokenHash, now);
    if (found && deps.cacheTtlMs > 0 && generation === startedAt) {
      if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(tokenHash, { value: found, freshUntil: deps.clock.now().getTime() + deps.cacheTtlMs });
    } else if (!found) cache.delete(tokenHash);
    return found;
  }

  return {
    async create(
      userId: string,
      meta: { ipAddress?: string; userAgent?: string } = {},
    ): Promise<{ token: string; expiresAt: Date }> {
      const token = randomToken(32);
      const expiresAt = new Date(deps.clock.now().getTime() + SESSION_LIFETIME_SECONDS * 1000);
      await sessionsRepo.insert(deps.db, {
        id: randomUUID(),
        tokenHash: sha256Hex(token),
        userId,
        expiresAt,
        ipAddress: meta.ipAddress ?? null,
        userAgent: meta.userAgent?.slice(0, 512) ?? null,
      });
      return { token, expiresAt };
    },

    validate(token: string): Promise<AuthenticatedSession | undefined> {
      return lookup(sha256Hex(token));
    },

    async revoke(token: string): Promise<void> {
      const tokenHash = sha256Hex(token);
      await sessionsRepo.deleteByTokenHash(deps.db, tokenHash);
      await deps.bus.publish(BUS_TOPICS.session, tokenHash);
    },

    /** Inside a transaction, call `forgetUser` after it commits. */
    async revokeAllForUser(userId: string, trx: Kysely<DB> = deps.db): Promise<void> {
      await sessionsRepo.deleteAllForUser(trx, userId);
      if (trx === deps.db) await this.forgetUser(userId);
    },

    /** Drops the user's cached sessions everywhere, e.g. after a role or password change. */
    forgetUser: (userId: string) => deps.bus.publish(BUS_TOPICS.session, `user:${userId}`),

    async deleteExpired(): Promise<void> {
      await sessionsRepo.deleteExpired(deps.db, deps.clock.now());
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
