import { sql } from 'kysely';
import type { Cursor } from '../lib/pagination.ts';

/**
 * The rows after `cursor` in (createdAt desc, id desc) order: a row-value comparison, which the
 * (created_at desc, id desc) indexes serve directly. Column names as in Kysely (camelCase, optionally
 * qualified: 'd.createdAt').
 */
export function olderThan(cursor: Cursor, createdAt: string, id: string) {
  return sql<boolean>`(${sql.ref(createdAt)}, ${sql.ref(id)}) < (${cursor.createdAt}, ${cursor.id})`;
}
