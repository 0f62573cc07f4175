import { z } from 'zod';
import { AppError } from './errors.ts';
import { isAcceptedInstant } from './instants.ts';
import { wholeNumber } from './whole-number.ts';

/** Keyset pagination over (createdAt desc, id desc): stable while rows are added. */
export interface Cursor {
  createdAt: Date;
  id: string;
}

export const paginationQuery = z.object({
  limit: wholeNumber().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursor.createdAt.toISOString()}|${cursor.id}`).toString('base64url');
}

export function decodeCursor(value: string | undefined): Cursor | undefined {
  if (value === undefined) return undefined;
  const [createdAt, id] = Buffer.from(value, 'base64url').toString('utf8').split('|');
  const date = new Date(createdAt ?? '');
  if (!id || !isAcceptedInstant(date) || !z.uuid().safeParse(id).success) {
    throw new AppError('validation_failed', 'querystring/cursor: not a cursor this API returned');
  }
  return { createdAt: date, id };
}

/** Given `limit + 1` rows, the page and the cursor of the next one. */
export function toPage<T extends Cursor>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}

/** A cursor over rows ordered by a number (a version, a position): it names the last one given. */
export const encodeNumberCursor = (kind: string, value: number) => Buffer.from(`${kind}:${value}`).toString('base64url');

export function decodeNumberCursor(kind: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const [prefix, digits] = Buffer.from(value, 'base64url').toString('utf8').split(':');
  if (prefix !== kind || !digits || !/^\d{1,9}$/.test(digits)) {
    throw new AppError('validation_failed', 'querystring/cursor: not a cursor this API returned');
  }
  return Number(digits);
}
