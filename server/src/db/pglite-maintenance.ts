import type { PGlite } from '@electric-sql/pglite';
import type { Logger } from 'pino';
import type { PGliteLock } from './pglite-dialect.ts';

/** How often the tables are looked at: autovacuum's own naptime. */
const INTERVAL_MS = 60_000;
/**
 * ANALYZE samples 300 rows per point of the target. PostgreSQL's 100 (30,000 rows) took 830 ms on the
 * deliveries of bench:ingest (their payloads and headers are large); a tenth of it still tells the
 * planner a table's size and its common values, at a tenth of the time.
 */
const STATISTICS_TARGET = 10;
/** A table that took this long is logged at info (else debug), as `log_autovacuum_min_duration` would. */
const SLOW_TABLE_MS = 1000;

/**
 * The tables that are due, by autovacuum's default rules (PostgreSQL 17): vacuum past 50 dead rows +
 * 20% of the table, 1,000 inserted rows + 20% (their pages marked all-visible, for index-only scans),
 * or a transaction id age of 200 million; analyze past 50 changed rows + 10% of the table.
 */
const DUE_TABLES = `
  select * from (
    select format('%I.%I', s.schemaname, s.relname) as name, s.n_dead_tup as dead,
      ($1::boolean or s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
        or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0) or age(c.relfrozenxid) > 200000000) as vacuum,
      s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0) as analyze
    from pg_stat_user_tables s join pg_class c on c.oid = s.relid
  ) t
  where "vacuum" or "analyze"
  order by dead desc`;

/** Runs `task` once after `ms`; the function returned cancels it. */
export type Schedule = (task: () => void, ms: number) => () => void;

/** A timer that does not keep the process alive. */
const afterTimeout: Schedule = (task, ms) => {
  const timer = setTimeout(task, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

export interface MaintainedTable {
  table: string;
  vacuumed: boolean;
  analyzed: boolean;
  ms: number;
}

/**
 * Vacuums and analyzes the embedded database's tables. PGlite is PostgreSQL in single-user mode: it
 * has no autovacuum, so without this its tables keep the dead rows of their updates and deletes (an
 * action's row is updated at each step, a callback delivery at each attempt, a job when fetched and
 * when done) and keep growing, are never analyzed for the planner, and their transaction ids are never
 * frozen.
 *
 * A statement on PGlite holds the event loop while it runs, so tables are done one at a time, each
 * taking its turn on the connection like any other statement: a vacuum of a 200,000-row table with a
 * fifth of it dead took about 220 ms, with 500 dead rows about 35 ms; both of the 200,000 deliveries
 * that a minute of bench:ingest stores, 110 ms.
 */
export function createPgliteMaintenance(deps: { pglite: PGlite; lock: PGliteLock; schedule?: Schedule }) {
  const schedule = deps.schedule ?? afterTimeout;
  let cancel: (() => void) | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;

  /** `everyTable`: vacuums every table, whatever its counters say. */
  async function runOnce(options: { everyTable?: boolean } = {}): Promise<MaintainedTable[]> {
    const due = await deps.lock.run(() =>
      deps.pglite.query<{ name: string; vacuum: boolean; analyze: boolean }>(DUE_TABLES, [options.everyTable ?? false]),
    );
    const done: MaintainedTable[] = [];
    for (const { name, vacuum, analyze } of due.rows) {
      if (stopped) break;
      const command = vacuum ? (analyze ? 'vacuum (analyze)' : 'vacuum') : 'analyze';
      const begun = performance.now();
      // Outside any transaction (VACUUM refuses one), between other holders' statements.
      await deps.lock.run(async () => {
        await deps.pglite.exec(`set default_statistics_target = ${STATISTICS_TARGET}`);
        try {
          await deps.pglite.exec(`${command} ${name}`);
        } finally {
          await deps.pglite.exec('reset default_statistics_target');
        }
      });
      done.push({ table: name, vacuumed: vacuum, analyzed: analyze, ms: Math.round(performance.now() - begun) });
    }
    return done;
  }

  return {
    runOnce,

    /** Looks at the tables every minute from now until stop(); logs what it did (info for a slow table). */
    start(logger: Logger) {
      if (stopped || cancel) return;
      // PGlite's counters start at zero in every process (they do not survive a restart): the dead
      // rows left before it are counted nowhere, so the first run vacuums every table.
      let everyTable = true;
      const runAndLog = async () => {
        try {
          const tables = await runOnce({ everyTable });
          everyTable = false;
          if (tables.length === 0) return;
          // A statement on PGlite holds the event loop: a long one is worth an operator's notice.
          const level = Math.max(...tables.map((table) => table.ms)) >= SLOW_TABLE_MS ? 'info' : 'debug';
          logger[level]({ tables }, 'embedded database vacuumed and analyzed');
        } catch (error) {
          logger.warn({ err: error }, 'could not vacuum the embedded database');
        }
      };
      const next = () => {
        cancel = schedule(() => {
          running = runAndLog().then(() => {
            if (!stopped) next();
          });
        }, INTERVAL_MS);
      };
      next();
    },

    /** Starts nothing more; waits for a run under way (the database closes after it). */
    async stop() {
      stopped = true;
      cancel?.();
      await running;
    },
  };
}

export type PgliteMaintenance = ReturnType<typeof createPgliteMaintenance>;
