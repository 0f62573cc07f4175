import type { Kysely } from 'kysely';
import type { DB, ThreadMessageRow, ThreadRow } from '../../db/schema.ts';
import { olderThan } from '../../db/keyset.ts';
import type { Cursor } from '../../lib/pagination.ts';

export const threadsRepo = {
  /** `limit + 1` rows of the user's threads, newest first, after the cursor. */
  listForUser: (db: Kysely<DB>, userId: string, limit: number, after?: Cursor): Promise<ThreadRow[]> =>
    db
      .selectFrom('threads')
      .selectAll()
      .where('userId', '=', userId)
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 'createdAt', 'id')))
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute(),

  insert: (
    db: Kysely<DB>,
    thread: { id: string; orgId: string | null; userId: string | null; channel: string; title: string; createdAt?: Date },
  ) => db.insertInto('threads').values(thread).returningAll().executeTakeFirstOrThrow(),

  findForUser: (db: Kysely<DB>, threadId: string, userId: string) =>
    db.selectFrom('threads').select('id').where('id', '=', threadId).where('userId', '=', userId).executeTakeFirst(),

  /** The thread's messages in order, from `afterSeq` on. */
  messages: (
    db: Kysely<DB>,
    threadId: string,
    options: { afterSeq?: number; limit?: number } = {},
  ): Promise<ThreadMessageRow[]> =>
    db
      .selectFrom('threadMessages')
      .selectAll()
      .where('threadId', '=', threadId)
      .$if(options.afterSeq !== undefined, (q) => q.where('seq', '>', options.afterSeq!))
      .orderBy('seq')
      .$if(options.limit !== undefined, (q) => q.limit(options.limit!))
      .execute(),

  /** What one action added to its thread (its run's conversation), in order: at most `limit` messages. */
  messagesOfAction: (db: Kysely<DB>, threadId: string, actionId: string, limit: number): Promise<ThreadMessageRow[]> =>
    db
      .selectFrom('threadMessages')
      .selectAll()
      .where('threadId', '=', threadId)
      .where('actionId', '=', actionId)
      .orderBy('seq')
      .limit(limit)
      .execute(),
};
