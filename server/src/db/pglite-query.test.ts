import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import type { Database } from './database.ts';

// PGlite's statements go through db/pglite-query.ts, PostgreSQL's through node-postgres: both databases
// must receive the same values, and a statement must survive its failures, prepared or not.
describe('statements with parameters, on both databases', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.close());

  it('send every kind of value the code base binds as node-postgres sends it', async () => {
    const at = new Date('2026-11-26T23:40:35.123Z');
    const run = () =>
      sql<Record<string, unknown>>`select
        ${at}::timestamptz = '2026-11-26T23:40:35.123Z'::timestamptz as same_instant,
        ${true}::boolean as yes, ${false}::boolean as no,
        (${['a', 'b,"c"', 'd\\e', '']}::text[])[2] as second, cardinality(${['a', 'b,"c"', 'd\\e', '']}::text[]) as items,
        ${{ a: [1, { b: 'x' }], s: 'ü' }}::jsonb #>> '{a,1,b}' as nested, ${{ s: 'ü' }}::jsonb ->> 's' as unicode,
        encode(${Buffer.from([0, 1, 255])}::bytea, 'hex') as bytes,
        ${12_345_678_901_234n}::int8::text as big, ${1.5}::numeric::text as decimal,
        ${null}::text is null as null_is_null, ${undefined}::text is null as undefined_is_null,
        ${'x'.repeat(100_000)}::text = repeat('x', 100000) as long_text`.execute(database.db);
    const expected = {
      sameInstant: true,
      yes: true,
      no: false,
      second: 'b,"c"',
      items: 4,
      nested: 'x',
      unicode: 'ü',
      bytes: '0001ff',
      big: '12345678901234',
      decimal: '1.5',
      nullIsNull: true,
      undefinedIsNull: true,
      longText: true,
    };
    // The first run is unnamed, the next ones prepared: all three alike.
    for (let i = 0; i < 3; i++) expect((await run()).rows[0]).toEqual(expected);
  });

  it('run a statement whose run failed as it was being prepared, and report the error with its code', async () => {
    await database.db.connection().execute(async (connection) => {
      const double = (value: unknown) => sql<{ n: number }>`select ${value}::int * 2 as n`.execute(connection);
      expect((await double(1)).rows[0]!.n).toBe(2);
      // Its second run prepares it: the Parse succeeds, the Bind fails.
      await expect(double('not a number')).rejects.toMatchObject({ code: '22P02' });
      expect((await double(3)).rows[0]!.n).toBe(6);
      expect((await double(4)).rows[0]!.n).toBe(8);
    });
  });

  it('refuse a NUL in text (22021) and receive a lone surrogate as U+FFFD, prepared or not, and go on', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(sql`select ${'a\u0000b'}::text as t`.execute(database.db)).rejects.toMatchObject({ code: '22021' });
      const lone = await sql<{ t: string }>`select ${'a\ud800b'}::text as t`.execute(database.db);
      expect(lone.rows[0]!.t).toBe('a\ufffdb');
    }
    const nested = '['.repeat(5_000) + ']'.repeat(5_000);
    expect((await sql<{ t: string }>`select jsonb_typeof(${nested}::jsonb) as t`.execute(database.db)).rows[0]!.t).toBe('array');
  });

  it('keep a transaction that a failed statement aborted aborted, until it rolls back', async () => {
    await database.db.connection().execute(async (connection) => {
      await sql`begin`.execute(connection);
      await expect(sql`select 1 / ${0}::int`.execute(connection)).rejects.toMatchObject({ code: '22012' });
      await expect(sql`select ${1}::int as n`.execute(connection)).rejects.toMatchObject({ code: '25P02' });
      await sql`rollback`.execute(connection);
      expect((await sql<{ n: number }>`select ${1}::int as n`.execute(connection)).rows[0]!.n).toBe(1);
    });
  });

  it('count the rows a statement changed', async () => {
    await database.db.connection().execute(async (connection) => {
      await sql`create table affected_probe (id int)`.execute(connection);
      for (let i = 0; i < 3; i++) {
        const inserted = await sql`insert into affected_probe select generate_series(1, ${2}::int)`.execute(connection);
        expect(inserted.numAffectedRows).toBe(2n);
      }
      const updated = await sql`update affected_probe set id = id + ${1}::int where id > ${1}::int`.execute(connection);
      expect(updated.numAffectedRows).toBe(3n);
    });
  });
});

// In a process of its own: before the fix, such a statement spun in PGlite's protocol loop for ever
// (a job ending after its process stopped kept vitest from exiting), which no timeout in this process ends.
const CLOSED_PGLITE_PROBE = `
  import { PGlite } from '@electric-sql/pglite';
  import { sql } from 'kysely';
  import { databaseOnPglite } from './src/db/database.ts';
  const settle = (promise) => promise.then(() => 'ran', (error) => error.message);
  const database = databaseOnPglite(await PGlite.create('memory://'));
  const beforeClose = database.jobsOptions.db.executeSql('select $1::int', [1]);
  const duringClose = settle(sql\`select \${2}::int\`.execute(database.db));
  await database.close();
  const afterClose = settle(database.jobsOptions.db.executeSql('select $1::int as n', [3]));
  console.log(JSON.stringify([await settle(beforeClose), await duringClose, await afterClose]));
`;

describe.runIf(process.env.TEST_DB === 'pglite')('statements on a PGlite that is closing or closed', () => {
  it('are refused, as PGlite refuses its own, instead of blocking the process', async () => {
    const serverDir = fileURLToPath(new URL('../..', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CLOSED_PGLITE_PROBE], {
      cwd: serverDir,
      timeout: 20_000,
    });
    const [beforeClose, duringClose, afterClose] = JSON.parse(stdout) as string[];
    expect(beforeClose).toBe('ran');
    expect(duringClose).toMatch(/^(ran|PGlite is closing|PGlite is closed|driver has already been destroyed)$/);
    expect(afterClose).toBe('PGlite is closed');
  });
});
