import { sql, type Kysely } from 'kysely';
import type { DB } from '../../../db/schema.ts';

export const userLimitsRepo = {
  externalIdentity: (db: Kysely<DB>, userId: string) =>
    db
      .selectFrom('users')
      .select(['externalProvider', 'externalUserId', 'externalTokenEncrypted'])
      .where('id', '=', userId)
      .executeTakeFirst(),

  used: async (db: Kysely<DB>, userId: string, windowKey: string): Promise<number> =>
    (
      await db
        .selectFrom('userModelUsage')
        .select('messages')
        .where('userId', '=', userId)
        .where('windowKey', '=', windowKey)
        .executeTakeFirst()
    )?.messages ?? 0,

  /** Counts one message if fewer than `max` were counted in the window; false: none left. */
  take: async (db: Kysely<DB>, userId: string, windowKey: string, max: number): Promise<boolean> => {
    const result = await sql`
      insert into user_model_usage (user_id, window_key, messages) values (${userId}, ${windowKey}, 1)
      on conflict (user_id, window_key) do update set messages = user_model_usage.messages + 1, updated_at = now()
      where user_model_usage.messages < ${max}`.execute(db);
    return Number(result.numAffectedRows ?? 0) > 0;
  },

  giveBack: (db: Kysely<DB>, userId: string, windowKey: string) =>
    db
      .updateTable('userModelUsage')
      .set({ messages: sql`greatest(0, messages - 1)`, updatedAt: sql`now()` })
      .where('userId', '=', userId)
      .where('windowKey', '=', windowKey)
      .execute(),
};
