import { sql, type Kysely } from 'kysely';
import { expect } from 'vitest';
import type { DB } from '../../src/db/schema.ts';

const synchronousCommit = async (db: Kysely<DB>) =>
  (await sql<{ value: string }>`select current_setting('synchronous_commit') as value`.execute(db)).rows[0]!.value;

/**
 * Runs `statement` in a transaction on one connection and checks that it turned the flush off for that
 * transaction only (db/flushless-commit.ts): the connection's next statement waits for its flush as before.
 */
export async function expectCommitWithoutFlush<T>(db: Kysely<DB>, statement: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  return db.connection().execute(async (connection) => {
    const before = await synchronousCommit(connection);
    expect(before).not.toBe('off');
    const result = await connection.transaction().execute(async (trx) => {
      const value = await statement(trx);
      expect(await synchronousCommit(trx)).toBe('off');
      return value;
    });
    expect(await synchronousCommit(connection)).toBe(before);
    return result;
  });
}
