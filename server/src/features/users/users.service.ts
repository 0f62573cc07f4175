import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB, UserRole, UserRow } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import { PASSWORD_MAX_BYTES, PASSWORD_MIN_LENGTH, type PasswordHasher } from '../../lib/passwords.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { usersRepo } from './users.repo.ts';

export const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `must be at least ${PASSWORD_MIN_LENGTH} characters`)
  .refine((value) => Buffer.byteLength(value, 'utf8') <= PASSWORD_MAX_BYTES, `must be at most ${PASSWORD_MAX_BYTES} bytes`);

export interface NewUserInput {
  email: string;
  role: UserRole;
  provider: string;
  password?: string;
  username?: string;
  firstName?: string | null;
  lastName?: string | null;
  codehostId?: string | null;
  idpId?: string | null;
  externalProvider?: string | null;
  externalUserId?: string | null;
  externalTokenEncrypted?: string | null;
}

/** A username from the email's local part when none is given. */
function defaultUsername(email: string): string {
  return email.split('@')[0] || email;
}

export function createUsersService(deps: { db: Kysely<DB>; passwords: PasswordHasher }) {
  return {
    async create(input: NewUserInput): Promise<UserRow> {
      if (input.password !== undefined) {
        const check = passwordSchema.safeParse(input.password);
        if (!check.success) throw new AppError('validation_failed', `Password ${check.error.issues[0]?.message}`);
      }
      const email = input.email.trim();
      try {
        return await usersRepo.insert(deps.db, {
          id: randomUUID(),
          email,
          username: input.username ?? defaultUsername(email),
          firstName: input.firstName ?? null,
          lastName: input.lastName ?? null,
          role: input.role,
          provider: input.provider,
          passwordHash: input.password === undefined ? null : await deps.passwords.hash(input.password),
          codehostId: input.codehostId ?? null,
          idpId: input.idpId ?? null,
          externalProvider: input.externalProvider ?? null,
          externalUserId: input.externalUserId ?? null,
          externalTokenEncrypted: input.externalTokenEncrypted ?? null,
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('email_in_use', 'A user with this email already exists');
        throw error;
      }
    },

    async setPassword(userId: string, password: string): Promise<void> {
      const check = passwordSchema.safeParse(password);
      if (!check.success) throw new AppError('validation_failed', `Password ${check.error.issues[0]?.message}`);
      await usersRepo.update(deps.db, userId, { passwordHash: await deps.passwords.hash(password) });
    },

    findByEmail: (email: string) => usersRepo.findByEmail(deps.db, email),
    count: () => usersRepo.count(deps.db),
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
