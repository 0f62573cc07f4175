import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
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

  insert: (db: Kysely<DB>, thread: { id: string; orgId: string | null; userId: string; channel: string; title: string; createdAt?: Date }) =>
    db.insertInto('threads').values(thread).returningAll().executeTakeFirstOrThrow(),

  findForUser: (db: Kysely<DB>, threadId: string, userId: string) =>
    db.selectFrom('threads').select('id').where('id', '=', threadId).where('userId', '=', userId).executeTakeFirst(),

  /** The thread's messages in order, from `afterSeq` on. */
  messages: (db: Kysely<DB>, threadId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<ThreadMessageRow[]> =>
    db.selectFrom('threadMessages').selectAll().where('threadId', '=', threadId)
      .$if(options.afterSeq !== undefined, (q) => q.where('seq', '>', options.afterSeq!))
      .orderBy('seq')
      .$if(options.limit !== undefined, (q) => q.limit(options.limit!))
      .execute(),

  /**
   * Appends messages at `firstSeq` on. (thread, seq) is unique, so two runners that somehow both
   * continue one conversation cannot both write the next step: the second fails.
   */
  appendMessages: (db: Kysely<DB>, threadId: string, firstSeq: number, messages: Array<{ role: 'user' | 'assistant' | 'tool'; content: unknown }>, actionId: string | null) =>
    db.insertInto('threadMessages')
      .values(messages.map((message, index) => ({ id: randomUUID(), threadId, seq: firstSeq + index, role: message.role, content: JSON.stringify(message.content), actionId })))
      .execute(),

  touch: (db: Kysely<DB>, threadId: string) => db.updateTable('threads').set({ updatedAt: new Date() }).where('id', '=', threadId).execute(),
};
