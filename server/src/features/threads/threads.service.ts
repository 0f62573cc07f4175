import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { decodeCursor, toPage } from '../../lib/pagination.ts';
import { threadsRepo } from './threads.repo.ts';

export function createThreadsService(deps: { db: Kysely<DB> }) {
  return {
    async listForUser(userId: string, options: { limit: number; cursor?: string }) {
      const rows = await threadsRepo.listForUser(deps.db, userId, options.limit, decodeCursor(options.cursor));
      return toPage(rows, options.limit);
    },
  };
}

export type ThreadsService = ReturnType<typeof createThreadsService>;
