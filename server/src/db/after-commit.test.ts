import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import { afterCommit, transaction } from './after-commit.ts';
import type { Database } from './database.ts';

describe('after-commit hooks', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.close());

  it('runs the hooks once the transaction has committed, in order, and returns its result', async () => {
    const ran: string[] = [];
    const result = await transaction(database.db, async (trx) => {
      expect(afterCommit(trx, () => ran.push('first'))).toBe(true);
      expect(afterCommit(trx, () => ran.push('second'))).toBe(true);
      const { rows } = await sql<{ n: number }>`select 1 as n`.execute(trx);
      // Still inside the transaction: nothing has run yet.
      expect(ran).toEqual([]);
      return rows[0]!.n;
    });
    expect(result).toBe(1);
    expect(ran).toEqual(['first', 'second']);
  });

  it('runs no hook when the transaction rolls back, and passes its error on', async () => {
    const ran: string[] = [];
    const failed = transaction(database.db, async (trx) => {
      afterCommit(trx, () => ran.push('hook'));
      throw new Error('roll back');
    });
    await expect(failed).rejects.toThrow('roll back');
    expect(ran).toEqual([]);
  });

  it('registers nothing on a transaction it did not open, nor on the database itself', async () => {
    const ran: string[] = [];
    await database.db.transaction().execute(async (trx) => {
      expect(afterCommit(trx, () => ran.push('hook'))).toBe(false);
    });
    expect(afterCommit(database.db, () => ran.push('hook'))).toBe(false);
    expect(ran).toEqual([]);
  });
});
