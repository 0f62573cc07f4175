import { sql, type Kysely } from 'kysely';
import type { DB, NewUser, UserRow, UserUpdate } from '../../db/schema.ts';

/** Plain queries on users; each takes the database or a transaction. */
export const usersRepo = {
  findById: (db: Kysely<DB>, id: string): Promise<UserRow | undefined> =>
    db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst(),

  findByEmail: (db: Kysely<DB>, email: string): Promise<UserRow | undefined> =>
    db.selectFrom('users').selectAll().where(sql<string>`lower(email)`, '=', email.toLowerCase()).executeTakeFirst(),

  findByProviderId: (db: Kysely<DB>, column: 'codehostId' | 'idpId', providerId: string): Promise<UserRow | undefined> =>
    db.selectFrom('users').selectAll().where(column, '=', providerId).executeTakeFirst(),

  findByExternalId: (db: Kysely<DB>, provider: string, externalUserId: string): Promise<UserRow | undefined> =>
    db
      .selectFrom('users')
      .selectAll()
      .where('externalProvider', '=', provider)
      .where('externalUserId', '=', externalUserId)
      .executeTakeFirst(),

  insert: (db: Kysely<DB>, user: NewUser): Promise<UserRow> =>
    db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow(),

  update: (db: Kysely<DB>, id: string, changes: UserUpdate): Promise<UserRow> =>
    db
      .updateTable('users')
      .set({ updatedAt: sql<Date>`now()`, ...changes })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow(),

  count: async (db: Kysely<DB>): Promise<number> =>
    (await db.selectFrom('users').select(sql<number>`count(*)::int`.as('count')).executeTakeFirstOrThrow()).count,
};
