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

  count: (db: Kysely<DB>, userId: string, windowKey: string) =>
    db
      .insertInto('userModelUsage')
      .values({ userId, windowKey, messages: 1 })
      .onConflict((oc) =>
        oc.columns(['userId', 'windowKey']).doUpdateSet({ messages: sql`user_model_usage.messages + 1`, updatedAt: sql`now()` }),
      )
      .execute(),
};
