import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { decodeCursor, toPage } from '../../lib/pagination.ts';
import { threadsRepo } from './threads.repo.ts';

export function createThreadsService(deps: { db: Kysely<DB> }) {
  return {
    async listForUser(userId: string, options: { limit: number; cursor?: string }) {
      const rows = await threadsRepo.listForUser(deps.db, userId, options.limit, decodeCursor(options.cursor));
      return toPage(rows, options.limit);
    },

    /** A thread's messages in order (model messages: text, tool calls, tool results); its owner only. */
    async messages(userId: string, threadId: string, options: { limit: number; cursor?: string }) {
      if (!(await threadsRepo.findForUser(deps.db, threadId, userId))) throw notFound('Thread');
      const afterSeq = options.cursor === undefined ? undefined : Number(options.cursor);
      if (afterSeq !== undefined && !Number.isSafeInteger(afterSeq))
        throw new AppError('validation_failed', 'cursor: not a cursor this API returned');
      const rows = await threadsRepo.messages(deps.db, threadId, { afterSeq, limit: options.limit + 1 });
      const items = rows.slice(0, options.limit);
      return {
        messages: items.map((row) => ({
          id: row.id,
          seq: row.seq,
          role: row.role,
          content: row.content,
          actionId: row.actionId,
          createdAt: row.createdAt,
        })),
        nextCursor: rows.length > options.limit ? String(items.at(-1)!.seq) : null,
      };
    },
  };
}

export type ThreadsService = ReturnType<typeof createThreadsService>;
