import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import { transaction } from './after-commit.ts';
import type { Database } from './database.ts';
import { PGliteSelfWaitError } from './pglite-dialect.ts';

const count = async (database: Database, name: string) =>
  Number((await sql<{ n: string }>`select count(*) as n from lock_probe where name = ${name}`.execute(database.db)).rows[0]!.n);

// PGlite has one connection: a transaction holds it until it ends. A statement on the database's handle
// awaited inside one waited for that transaction, and the transaction for it: the process's every
// statement hung behind them (an approval with edited arguments did, until 0f01673).
describe.skipIf(process.env.TEST_DB === 'postgres')('the one connection of PGlite', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
    await sql`create table lock_probe (name text not null)`.execute(database.db);
  });
  afterAll(() => database.close());

  it('refuses a statement on the handle awaited inside a transaction at once, and the connection goes on', async () => {
    const failed = transaction(database.db, async (trx) => {
      await sql`insert into lock_probe values ('rolled back')`.execute(trx);
      await sql`select 1`.execute(database.db);
    });
    await expect(failed).rejects.toBeInstanceOf(PGliteSelfWaitError);
    await expect(failed).rejects.toThrow(/Run it through the transaction, or before the transaction opens/);
    // The transaction rolled back and released the connection: the next statements run.
    expect(await count(database, 'rolled back')).toBe(0);
    await transaction(database.db, (trx) => sql`insert into lock_probe values ('committed')`.execute(trx));
    expect(await count(database, 'committed')).toBe(1);
  });

  it('refuses a transaction, a reserved connection and a job queue statement opened inside one alike', async () => {
    const nested = transaction(database.db, () => transaction(database.db, (inner) => sql`select 1`.execute(inner)));
    await expect(nested).rejects.toBeInstanceOf(PGliteSelfWaitError);
    const reserved = database.db.connection().execute(() => sql`select 1`.execute(database.db));
    await expect(reserved).rejects.toBeInstanceOf(PGliteSelfWaitError);
    const job = database.db.transaction().execute(() => database.jobsOptions.db!.executeSql('select 1'));
    await expect(job).rejects.toBeInstanceOf(PGliteSelfWaitError);
    expect((await database.jobsOptions.db!.executeSql('select 1 as n')).rows).toEqual([{ n: 1 }]);
  });

  it('runs what a transaction started once it has ended, and transactions of other requests after it', async () => {
    let ended!: () => void;
    const transactionEnded = new Promise<void>((resolve) => (ended = resolve));
    let afterwards: Promise<unknown> | undefined;
    const both = await Promise.all([
      transaction(database.db, async (trx) => {
        // Started here, run once the transaction has released the connection: not a wait for itself.
        afterwards = transactionEnded.then(() => sql`insert into lock_probe values ('afterwards')`.execute(database.db));
        await sql`insert into lock_probe values ('first')`.execute(trx);
        return 'first';
      }).finally(ended),
      transaction(database.db, async (trx) => {
        await sql`insert into lock_probe values ('second')`.execute(trx);
        return 'second';
      }),
    ]);
    await afterwards;
    expect(both).toEqual(['first', 'second']);
    for (const name of ['first', 'second', 'afterwards']) expect(await count(database, name)).toBe(1);
  });

  it("runs a listener's statements after the transaction whose commit notified it", async () => {
    let heard!: (rows: number) => void;
    const listenerRead = new Promise<number>((resolve) => (heard = resolve));
    await database.listenInProcess!('probe', () => {
      void count(database, 'notified').then(heard);
    });
    await transaction(database.db, async (trx) => {
      await sql`insert into lock_probe values ('notified')`.execute(trx);
      await sql`select pg_notify('probe', '')`.execute(trx);
    });
    // The listener is called inside the commit; its read runs after it, and sees the row.
    expect(await listenerRead).toBe(1);
  });
});
