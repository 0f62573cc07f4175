import type { Kysely } from 'kysely';
import type { DB, SessionRow, UserRow } from '../../db/schema.ts';

export const sessionsRepo = {
  insert: (db: Kysely<DB>, session: Omit<SessionRow, 'createdAt'>) => db.insertInto('sessions').values(session).execute(),

  /** The session and its user in one indexed lookup: the hot path of every authenticated request. */
  async findValidByTokenHash(
    db: Kysely<DB>,
    tokenHash: string,
    now: Date,
  ): Promise<{ session: SessionRow; user: UserRow } | undefined> {
    const row = await db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.userId')
      .selectAll('users')
      .select([
        'sessions.id as sessionId',
        'sessions.expiresAt as sessionExpiresAt',
        'sessions.createdAt as sessionCreatedAt',
        'sessions.ipAddress as sessionIpAddress',
        'sessions.userAgent as sessionUserAgent',
      ])
      .where('sessions.tokenHash', '=', tokenHash)
      .where('sessions.expiresAt', '>', now)
      .executeTakeFirst();
    if (!row) return undefined;
    const { sessionId, sessionExpiresAt, sessionCreatedAt, sessionIpAddress, sessionUserAgent, ...user } = row;
    return {
      user,
      session: {
        id: sessionId,
        tokenHash,
        userId: user.id,
        expiresAt: sessionExpiresAt,
        createdAt: sessionCreatedAt,
        ipAddress: sessionIpAddress,
        userAgent: sessionUserAgent,
      },
    };
  },

  deleteByTokenHash: (db: Kysely<DB>, tokenHash: string) =>
    db.deleteFrom('sessions').where('tokenHash', '=', tokenHash).execute(),

  deleteAllForUser: (db: Kysely<DB>, userId: string) => db.deleteFrom('sessions').where('userId', '=', userId).execute(),

  deleteExpired: (db: Kysely<DB>, now: Date) => db.deleteFrom('sessions').where('expiresAt', '<=', now).execute(),
};
