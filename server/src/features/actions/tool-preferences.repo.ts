import { sql, type Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';

export const toolPreferencesRepo = {
  list: (db: Kysely<DB>, userId: string) =>
    db
      .selectFrom('userToolPreferences')
      .select(['toolName', 'preference', 'updatedAt'])
      .where('userId', '=', userId)
      .orderBy('toolName')
      .execute(),

  remove: (db: Kysely<DB>, userId: string, toolName: string) =>
    db.deleteFrom('userToolPreferences').where('userId', '=', userId).where('toolName', '=', toolName).execute(),

  upsert: (db: Kysely<DB>, userId: string, toolName: string, preference: 'always_deny') =>
    db
      .insertInto('userToolPreferences')
      .values({ userId, toolName, preference })
      .onConflict((oc) => oc.columns(['userId', 'toolName']).doUpdateSet({ preference, updatedAt: sql<Date>`now()` }))
      .returning(['toolName', 'preference', 'updatedAt'])
      .executeTakeFirstOrThrow(),
};
