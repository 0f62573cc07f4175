import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB, SessionRow, UserRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { sessionsRepo } from './sessions.repo.ts';

/** Spec 2.2: 30 days. */
export const SESSION_LIFETIME_SECONDS = 30 * 24 * 60 * 60;

export interface AuthenticatedSession {
  user: UserRow;
  session: SessionRow;
}

/**
 * Sessions are opaque 256-bit tokens; only their SHA-256 is stored, so a database leak yields no
 * usable session. Looking up by the hash of the presented token is itself the comparison: no
 * secret is compared byte by byte in application code.
 */
export function createSessionsService(deps: { db: Kysely<DB>; clock: Clock }) {
  return {
    async create(userId: string, meta: { ipAddress?: string; userAgent?: string } = {}): Promise<{ token: string; expiresAt: Date }> {
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
      return sessionsRepo.findValidByTokenHash(deps.db, sha256Hex(token), deps.clock.now());
    },

    async revoke(token: string): Promise<void> {
      await sessionsRepo.deleteByTokenHash(deps.db, sha256Hex(token));
    },

    async revokeAllForUser(userId: string, trx: Kysely<DB> = deps.db): Promise<void> {
      await sessionsRepo.deleteAllForUser(trx, userId);
    },

    async deleteExpired(): Promise<void> {
      await sessionsRepo.deleteExpired(deps.db, deps.clock.now());
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
