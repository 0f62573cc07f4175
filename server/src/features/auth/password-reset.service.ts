import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { JobPayload } from '../../jobs/registry.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import type { PasswordHasher } from '../../lib/passwords.ts';
import type { SystemMailer } from '../../lib/system-mailer.ts';
import { passwordSchema } from '../users/users.service.ts';
import { usersRepo } from '../users/users.repo.ts';
import { passwordResetRepo } from './password-reset.repo.ts';
import type { SessionsService } from './sessions.service.ts';

export const RESET_TOKEN_LIFETIME_MS = 60 * 60 * 1000;

export function createPasswordResetService(deps: {
  db: Kysely<DB>;
  clock: Clock;
  jobs: Pick<JobRunner, 'enqueue'>;
  mailer: SystemMailer;
  passwords: PasswordHasher;
  sessions: SessionsService;
  appHost: string;
  logger: Logger;
}) {
  return {
    /**
     * The request only enqueues; the worker looks the account up. So the answer and its timing are
     * the same whether or not the account exists.
     */
    async requestReset(email: string): Promise<void> {
      await deps.jobs.enqueue('auth.password-reset', {
        email: email.trim().toLowerCase(),
        requestedAt: deps.clock.now().toISOString(),
      });
    },

    /** Job: issue a fresh token (voiding earlier ones) and mail the link. */
    async sendResetLink({ email }: JobPayload<'auth.password-reset'>): Promise<void> {
      const user = await usersRepo.findByEmail(deps.db, email);
      if (!user) {
        deps.logger.info('password reset requested for an unknown email; nothing sent');
        return;
      }
      const token = randomToken(32);
      const now = deps.clock.now();
      await deps.db.transaction().execute(async (trx) => {
        await passwordResetRepo.voidActiveForUser(trx, user.id, now);
        await passwordResetRepo.insert(trx, {
          id: randomUUID(),
          userId: user.id,
          tokenHash: sha256Hex(token),
          expiresAt: new Date(now.getTime() + RESET_TOKEN_LIFETIME_MS),
        });
      });
      const link = `${deps.appHost}/reset-password?token=${encodeURIComponent(token)}`;
      await deps.mailer.send({
        to: user.email,
        subject: 'Reset your Agent Platform password',
        text:
          `Someone asked to reset the password of this account.\n\nSet a new password: ${link}\n\nThe link works once, ` +
          `for one hour. If you did not ask for it, ignore this email.`,
      });
    },

    async deleteStaleTokens(): Promise<void> {
      await passwordResetRepo.deleteStale(deps.db, new Date(deps.clock.now().getTime() - 24 * 60 * 60 * 1000));
    },

    /** Consumes the token atomically, sets the password and ends every session of the user. */
    async resetPassword(token: string, newPassword: string): Promise<void> {
      const check = passwordSchema.safeParse(newPassword);
      if (!check.success) throw new AppError('validation_failed', `newPassword ${check.error.issues[0]?.message}`);
      // Hash first: the transaction below stays short.
      const passwordHash = await deps.passwords.hash(newPassword);
      const now = deps.clock.now();
      const userId = await deps.db.transaction().execute(async (trx) => {
        const consumed = await passwordResetRepo.consume(trx, sha256Hex(token), now);
        if (!consumed) throw new AppError('invalid_reset_token', 'Invalid or expired reset token');
        await usersRepo.update(trx, consumed, { passwordHash, updatedAt: now });
        await deps.sessions.revokeAllForUser(consumed, trx);
        return consumed;
      });
      await deps.sessions.forgetUser(userId);
    },
  };
}

export type PasswordResetService = ReturnType<typeof createPasswordResetService>;
