import type { Kysely } from 'kysely';
import type { DB, UserRow } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import type { PasswordHasher } from '../../lib/passwords.ts';
import { usersRepo } from '../users/users.repo.ts';
import type { SessionsService } from './sessions.service.ts';

export interface RequestMeta {
  ipAddress?: string;
  userAgent?: string;
}

export interface SignedIn {
  user: UserRow;
  token: string;
  expiresAt: Date;
}

export function createAuthService(deps: { db: Kysely<DB>; passwords: PasswordHasher; sessions: SessionsService }) {
  return {
    /**
     * One answer for an unknown email and a wrong password, and the same work for both: the hasher
     * compares against a dummy hash when there is no stored one.
     */
    async loginWithCredentials(email: string, password: string, meta: RequestMeta): Promise<SignedIn> {
      const user = await usersRepo.findByEmail(deps.db, email);
      const matches = await deps.passwords.verify(password, user?.passwordHash ?? null);
      if (!user || !matches) throw new AppError('invalid_credentials', 'Invalid email or password');
      return { user, ...(await deps.sessions.create(user.id, meta)) };
    },

    /** Deleting an unknown or already deleted session is not an error: logout is idempotent. */
    logout: (token: string) => deps.sessions.revoke(token),

    /** A user's own preferences; what is not given stays as it was. */
    async setPreferences(userId: string, changes: { approvalEmails?: boolean }): Promise<{ approvalEmails: boolean }> {
      const user =
        changes.approvalEmails === undefined
          ? await usersRepo.findById(deps.db, userId)
          : await usersRepo.update(deps.db, userId, { approvalEmails: changes.approvalEmails });
      // Sessions carry the user row (cached): the next /auth/me must show the change.
      await deps.sessions.forgetUser(userId);
      return { approvalEmails: user!.approvalEmails };
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
