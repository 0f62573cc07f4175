import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type pg from 'pg';

const MARK = '/*prepared*/';

/**
 * Put first in a hot statement whose text never changes (`sql\`${PREPARED} select ...\``): on
 * PostgreSQL each connection then parses and plans it once, as a named prepared statement, instead
 * of on every execution. Only marked statements are prepared, so their number stays small and fixed.
 * (PGlite runs in process; the mark is a comment there.)
 */
export const PREPARED = sql.raw(MARK);

/** The same mark, for statement text we do not build ourselves (pg-boss's job insert). */
export const markPrepared = (text: string) => MARK + text;

const names = new Map<string, string>();
const nameOf = (text: string) => {
  let name = names.get(text);
  if (!name) names.set(text, (name = `p_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`));
  return name;
};

type Query = (...args: unknown[]) => unknown;

/** Makes every client of the pool run marked statements as named prepared statements. */
export function preparingPool(pool: pg.Pool): pg.Pool {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = (text: unknown, ...rest: unknown[]) =>
      typeof text === 'string' && text.startsWith(MARK) ? query({ name: nameOf(text), text, values: rest[0] }, ...rest.slice(1)) : query(text, ...rest);
  });
  return pool;
}
