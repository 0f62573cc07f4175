import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../test/helpers/eventually.ts';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import type { Database } from './database.ts';
import { PGliteLock } from './pglite-dialect.ts';
import { createPgliteMaintenance } from './pglite-maintenance.ts';

interface TableStats {
  n_dead_tup: number;
  vacuumed: boolean;
  analyzed: boolean;
}

/** The table's counters, flushed first (a backend sends its own counters at most once a second otherwise). */
async function statsOf(pglite: PGlite, table: string): Promise<TableStats> {
  await pglite.query('select pg_stat_force_next_flush()');
  const { rows } = await pglite.query<TableStats>(
    `select n_dead_tup, last_vacuum is not null as vacuumed, last_analyze is not null as analyzed
     from pg_stat_user_tables where relname = $1`,
    [table],
  );
  return rows[0]!;
}

describe.skipIf(process.env.TEST_DB === 'postgres')(
  'the embedded database is vacuumed and analyzed (PGlite has no autovacuum)',
  // Each test creates a PGlite of its own (initdb in WebAssembly): 40 s on a slow, loaded 2-core machine.
  { timeout: 120_000 },
  () => {
    let pglite: PGlite | undefined;
    afterEach(async () => {
      await pglite?.close();
      pglite = undefined;
    });

    async function churned(): Promise<PGlite> {
      pglite = await PGlite.create();
      await pglite.exec(`
      create table churned (id int primary key, status text);
      insert into churned select n, 'queued' from generate_series(1, 2000) n;
      update churned set status = 'done';
      create table quiet (id int primary key);
      insert into quiet values (1);`);
      await pglite.query('select pg_stat_force_next_flush()');
      return pglite;
    }

    it('vacuums and analyzes a table past autovacuum thresholds, and leaves a quiet one alone', async () => {
      const db = await churned();
      // Nothing here would ever do it: PGlite runs no autovacuum of its own.
      expect(await statsOf(db, 'churned')).toEqual({ n_dead_tup: 2000, vacuumed: false, analyzed: false });
      const maintenance = createPgliteMaintenance({ pglite: db, lock: new PGliteLock() });

      const done = await maintenance.runOnce();

      expect(done.map(({ table, vacuumed, analyzed }) => ({ table, vacuumed, analyzed }))).toEqual([
        { table: 'public.churned', vacuumed: true, analyzed: true },
      ]);
      expect(await statsOf(db, 'churned')).toEqual({ n_dead_tup: 0, vacuumed: true, analyzed: true });
      expect(await statsOf(db, 'quiet')).toMatchObject({ vacuumed: false, analyzed: false });
      // Once done, a table is not due again until it changes again.
      await db.query('select pg_stat_force_next_flush()');
      expect(await maintenance.runOnce()).toEqual([]);
    });

    it('takes its turn on the connection: a transaction opened before a vacuum is waited for, not joined', async () => {
      const db = await churned();
      // Right after the maintenance looked at the tables, someone opens a transaction, and commits it
      // only once the maintenance has asked for its next turn.
      class InterleavedLock extends PGliteLock {
        release: (() => void) | undefined;
        override async run<T>(fn: () => Promise<T>): Promise<T> {
          const holder = this.release;
          if (holder) {
            this.release = undefined;
            const turn = super.run(fn);
            await db.query('commit');
            holder();
            return turn;
          }
          const result = await super.run(fn);
          this.release = await this.acquire();
          await db.query('begin');
          return result;
        }
      }
      const maintenance = createPgliteMaintenance({ pglite: db, lock: new InterleavedLock() });

      // Inside that transaction the vacuum would fail ("VACUUM cannot run inside a transaction block").
      expect(await maintenance.runOnce()).toEqual([expect.objectContaining({ table: 'public.churned', vacuumed: true })]);
    });

    it('vacuums every table when asked, whatever the counters say (they start at zero after a restart)', async () => {
      const db = await churned();
      await db.query('select pg_stat_reset()');
      const maintenance = createPgliteMaintenance({ pglite: db, lock: new PGliteLock() });
      expect(await maintenance.runOnce()).toEqual([]);

      const done = await maintenance.runOnce({ everyTable: true });

      expect(done.map(({ table, vacuumed }) => ({ table, vacuumed }))).toEqual(
        expect.arrayContaining([
          { table: 'public.churned', vacuumed: true },
          { table: 'public.quiet', vacuumed: true },
        ]),
      );
      expect(await statsOf(db, 'churned')).toMatchObject({ vacuumed: true });
    });

    it('runs every interval once started, until stopped', async () => {
      const db = await churned();
      // The timer, driven by hand: each entry a run waiting for its interval.
      const due: Array<() => void> = [];
      const schedule = (task: () => void, ms: number) => {
        expect(ms).toBe(60_000);
        due.push(task);
        return () => {
          const index = due.indexOf(task);
          if (index >= 0) due.splice(index, 1);
        };
      };
      const maintenance = createPgliteMaintenance({ pglite: db, lock: new PGliteLock(), schedule });
      const warnings: string[] = [];
      maintenance.start(pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) }));
      expect(due).toHaveLength(1);

      due.shift()!();
      await eventually('the next run scheduled', () => (due.length === 1 ? true : undefined));

      // The first run after a start vacuums every table, the quiet one too.
      expect(await statsOf(db, 'churned')).toMatchObject({ vacuumed: true });
      expect(await statsOf(db, 'quiet')).toMatchObject({ vacuumed: true });
      expect(warnings).toEqual([]);
      await maintenance.stop();
      expect(due).toEqual([]);
    });
  },
);

describe('which database gets it', () => {
  let database: Database | undefined;
  afterEach(() => database?.close());

  it('the embedded one only: a PostgreSQL server runs its own autovacuum', async () => {
    database = await createTestDatabase();
    if (database.kind === 'postgres') {
      expect(database.maintenance).toBeUndefined();
      return;
    }
    // 200 rows written and deleted: past both thresholds. (Updates of a small table were not always:
    // pruning its page as they went took dead rows off the count.)
    await sql`create table churned (id integer primary key)`.execute(database.db);
    await sql`insert into churned select generate_series(1, 200)`.execute(database.db);
    await sql`delete from churned`.execute(database.db);
    await sql`select pg_stat_force_next_flush()`.execute(database.db);
    const done = await database.maintenance!.runOnce();
    expect(done).toContainEqual(expect.objectContaining({ table: 'public.churned', vacuumed: true, analyzed: true }));
    const { rows } = await sql<{ dead: number }>`
      select n_dead_tup as dead from pg_stat_user_tables where relname = 'churned'`.execute(database.db);
    expect(rows[0]!.dead).toBe(0);
  });
});
