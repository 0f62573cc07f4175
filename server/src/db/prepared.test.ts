import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import type { Database } from './database.ts';
import { PREPARED } from './prepared.ts';

describe('prepared statements', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.close());

  it('runs a marked statement as a named prepared statement on PostgreSQL, and only marked ones', async () => {
    const seen = await database.db.transaction().execute(async (trx) => {
      const results = [];
      for (const n of [1, 2, 3]) results.push((await sql<{ twice: number }>`${PREPARED} select ${n}::int * 2 as twice`.execute(trx)).rows[0]!.twice);
      await sql`select ${4}::int as unmarked`.execute(trx);
      const statements = database.kind === 'postgres'
        ? (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(trx)).rows
        : [];
      return { results, statements };
    });
    expect(seen.results).toEqual([2, 4, 6]);
    if (database.kind !== 'postgres') return;
    expect(seen.statements).toHaveLength(1);
    expect(seen.statements[0]!.name).toMatch(/^p_[0-9a-f]{20}$/);
    expect(seen.statements[0]!.statement).toContain('select $1::int * 2 as twice');
  });

  it('reports a marked statement\'s errors like any other', async () => {
    await expect(sql`${PREPARED} select 1 / ${0}::int`.execute(database.db)).rejects.toThrow(/division by zero/);
    expect((await sql<{ ok: number }>`${PREPARED} select ${1}::int as ok`.execute(database.db)).rows[0]!.ok).toBe(1);
  });
});
