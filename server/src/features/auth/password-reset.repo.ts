import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';

export const passwordResetRepo = {
  /** Earlier tokens of the user stop working when a new one is issued. */
  voidActiveForUser: (db: Kysely<DB>, userId: string, now: Date) =>
    db.updateTable('passwordResetTokens').set({ usedAt: now }).where('userId', '=', userId).where('usedAt', 'is', null).execute(),

  insert: (db: Kysely<DB>, token: { id: string; userId: string; tokenHash: string; expiresAt: Date }) =>
    db.insertInto('passwordResetTokens').values(token).execute(),

  /** Used and expired tokens are kept a day for support questions, then deleted. */
  deleteStale: (db: Kysely<DB>, before: Date) =>
    db
      .deleteFrom('passwordResetTokens')
      .where((eb) => eb.or([eb('expiresAt', '<', before), eb('usedAt', '<', before)]))
      .execute(),

  /** Marks the token used in one statement, so two concurrent resets cannot both consume it. */
  async consume(db: Kysely<DB>, tokenHash: string, now: Date): Promise<string | undefined> {
    const row = await db
      .updateTable('passwordResetTokens')
      .set({ usedAt: now })
      .where('tokenHash', '=', tokenHash)
      .where('usedAt', 'is', null)
      .where('expiresAt', '>', now)
      .returning('userId')
      .executeTakeFirst();
    return row?.userId;
  },
};
