import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import type { Database } from './database.ts';
import { createStatementNamer, PLANNED_PER_CALL, preparingPool } from './prepared.ts';

describe('prepared statements', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.close());

  it('runs a repeated statement with parameters as a named prepared statement', async () => {
    const seen = await database.db.transaction().execute(async (trx) => {
      const results = [];
      for (const n of [1, 2, 3])
        results.push((await sql<{ twice: number }>`select ${n}::int * 2 as twice`.execute(trx)).rows[0]!.twice);
      await sql`select ${4}::int as once`.execute(trx);
      await sql`select 5 as no_parameters`.execute(trx);
      await sql`select 5 as no_parameters`.execute(trx);
      const statements = (
        await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(trx)
      ).rows;
      return { results, statements };
    });
    expect(seen.results).toEqual([2, 4, 6]);
    expect(seen.statements.map((statement) => statement.statement)).toEqual(['select $1::int * 2 as twice']);
  });

  it("reports a prepared statement's errors like any other", async () => {
    for (let i = 0; i < 3; i++) await expect(sql`select 1 / ${0}::int`.execute(database.db)).rejects.toThrow(/division by zero/);
    expect((await sql<{ ok: number }>`select ${1}::int as ok`.execute(database.db)).rows[0]!.ok).toBe(1);
  });

  it('recovers when a table changes under a prepared select *: one failure, then the new columns', async () => {
    await database.db.connection().execute(async (connection) => {
      await sql`create table prepared_probe (id int)`.execute(connection);
      await sql`insert into prepared_probe values (1)`.execute(connection);
      const select = () => sql<Record<string, unknown>>`select * from prepared_probe where id = ${1}`.execute(connection);
      await select();
      expect((await select()).rows).toEqual([{ id: 1 }]);
      await sql`alter table prepared_probe add column label text default 'x'`.execute(connection);
      await expect(select()).rejects.toThrow(/cached plan must not change result type/);
      await select();
      expect((await select()).rows).toEqual([{ id: 1, label: 'x' }]);
    });
  });

  it('prepares at most maxStatements texts, on their second run', () => {
    const namer = createStatementNamer({ maxStatements: 2 });
    expect(namer.nameOf('a')).toBeUndefined();
    const a = namer.nameOf('a');
    expect(a).toMatch(/^p0_[0-9a-f]{24}$/);
    expect(namer.nameOf('a')).toBe(a);
    namer.nameOf('b');
    expect(namer.nameOf('b')).toBeDefined();
    namer.nameOf('c');
    expect(namer.nameOf('c')).toBeUndefined();
  });

  it('moves a statement whose result type changed under it to a new name', () => {
    const namer = createStatementNamer();
    namer.nameOf('select * from t');
    const before = namer.nameOf('select * from t');
    namer.forgetIfStale('select * from t', Object.assign(new Error('division by zero'), { code: '22012' }));
    expect(namer.nameOf('select * from t')).toBe(before);
    namer.forgetIfStale(
      'select * from t',
      Object.assign(new Error('cached plan must not change result type'), { code: '0A000' }),
    );
    namer.nameOf('select * from t');
    const after = namer.nameOf('select * from t');
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
  });

  it('prepares a statement again under a new name after the given numbers of runs', () => {
    const namer = createStatementNamer({ replanAfterRuns: [3, 5] });
    const names = Array.from({ length: 7 }, () => namer.nameOf('select $1'));
    expect(names[0]).toBeUndefined();
    expect(names[1]).toMatch(/^p0_[0-9a-f]{24}$/);
    expect(names[2]).toBe(names[1]);
    expect(names[3]).toBe(`${names[1]}_1`);
    expect(names[4]).toBe(`${names[1]}_1`);
    expect(names[5]).toBe(`${names[1]}_2`);
    expect(names[6]).toBe(`${names[1]}_2`);
  });

  it('prepares a statement again after a slow run, 10 s after its last plan, then 100 s, 1,000 s', () => {
    let clock = 0;
    const namer = createStatementNamer({ slowRunMs: 50, slowReplanEveryMs: 10_000, now: () => clock });
    /** A run under `name` that took `ms`, reported at `at`; then the name the next run gets. */
    const runAt = (at: number, name: string, ms = 1_300) => {
      clock = at;
      namer.ran('select $1', name, ms);
      return namer.nameOf('select $1');
    };
    namer.nameOf('select $1');
    const first = namer.nameOf('select $1')!;
    expect(runAt(10_000, first, 49)).toBe(first);
    const second = runAt(10_000, first)!;
    expect(second).toBe(`${first}_1`);
    // Slow again within the interval (a commit waiting for the disk, not the plan): kept.
    expect(runAt(19_999, second)).toBe(second);
    // A slow run still under the name it replaced says nothing of the new plan.
    expect(runAt(40_000, first)).toBe(second);
    // The next slow replan waits ten times longer: 100 s after the last plan.
    expect(runAt(109_999, second)).toBe(second);
    const third = runAt(110_000, second)!;
    expect(third).toBe(`${first}_2`);
    expect(runAt(1_000_000, third)).toBe(third);
    expect(runAt(1_110_000, third)).toBe(`${first}_3`);
  });

  it('runs a statement again under a new name on PostgreSQL after one of its runs was slow', async () => {
    if (database.kind !== 'postgres') return;
    const namer = createStatementNamer({ slowRunMs: 200, slowReplanEveryMs: 0 });
    const pool = preparingPool(new pg.Pool({ connectionString: database.url, max: 1 }), namer);
    try {
      const text = 'select pg_sleep($1::float8) is null as slept';
      const prepared = async () =>
        (
          await pool.query<{ name: string }>(`select name from pg_prepared_statements where statement = $1 order by name`, [text])
        ).rows.map((row) => row.name);
      await pool.query(text, [0]);
      await pool.query(text, [0]);
      const before = await prepared();
      expect(before).toHaveLength(1);
      await pool.query(text, [0.25]);
      await pool.query(text, [0]);
      const after = await prepared();
      expect(after.length).toBeGreaterThan(1);
      expect(after).toContain(`${before[0]}_1`);
    } finally {
      await pool.end();
    }
  });

  it('never prepares a statement planned per call', async () => {
    const namer = createStatementNamer();
    const text = `${PLANNED_PER_CALL} select $1`;
    expect([namer.nameOf(text), namer.nameOf(text), namer.nameOf(text)]).toEqual([undefined, undefined, undefined]);
    const statements = await database.db.connection().execute(async (connection) => {
      for (let i = 0; i < 3; i++) await sql`${sql.raw(PLANNED_PER_CALL)} select ${i}::int as n`.execute(connection);
      return (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(connection)).rows;
    });
    expect(statements.filter((row) => row.statement.startsWith(PLANNED_PER_CALL))).toEqual([]);
  });

  it('runs a re-prepared statement on the connections that had prepared it before', async () => {
    const seen = await database.db.connection().execute(async (connection) => {
      const results = [];
      // The service's namer prepares again after 1,000 runs: the connection then holds both names.
      for (let i = 0; i < 1_002; i++)
        results.push((await sql<{ n: number }>`select ${i}::int as n`.execute(connection)).rows[0]!.n);
      const prepared = await sql<{ name: string }>`select name from pg_prepared_statements
        where statement = 'select $1::int as n' order by name`.execute(connection);
      return { last: results.at(-1), names: prepared.rows.map((row) => row.name) };
    });
    expect(seen.last).toBe(1_001);
    expect(seen.names).toHaveLength(2);
    expect(seen.names[1]).toBe(`${seen.names[0]}_1`);
  });
});
