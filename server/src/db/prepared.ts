import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Named prepared statements for repeated statements, as JDBC's driver does (prepareThreshold): a
 * statement with parameters whose text has run before is parsed and planned once per connection,
 * then only bound and executed. Parsing and planning were a third of PostgreSQL's time on the hot
 * paths (ingest, action runs, pg-boss's fetch and complete). At most `maxStatements` texts are
 * prepared per process, so statements whose text varies (multi-row inserts) cannot grow it without
 * bound. Statements without parameters (BEGIN, scripts) run as before.
 *
 * PostgreSQL keeps a prepared statement's generic plan until its tables are analyzed again; one made
 * in a new database's first seconds scans tables that have since grown (a sequential scan of
 * tool_calls per email step in bench:email). So a statement is prepared again, under a new name,
 * after 1,000, 10,000, 100,000 and 1,000,000 runs: planned at the sizes of its tables then.
 */
const REPLAN_AFTER_RUNS = [1_000, 10_000, 100_000, 1_000_000];

/**
 * Begins a statement whose good plan depends on its parameters' values: the rows it takes as arrays
 * (their count is known to the planner only from the values). It is not prepared, so PostgreSQL plans
 * it for each call with the values in hand, never with a generic plan made once. Planning a large
 * statement costs about a millisecond: worth it for a batch, not for one row (writeActions).
 */
export const PLANNED_PER_CALL = '/* planned per call */';

export function createStatementNamer(options: { maxStatements?: number; replanAfterRuns?: number[] } = {}) {
  const maxStatements = options.maxStatements ?? 300;
  const replanAfterRuns = options.replanAfterRuns ?? REPLAN_AFTER_RUNS;
  const seen = new Map<string, number>();
  const names = new Map<string, { name: string; runs: number; plans: number }>();
  let generation = 0;
  const nameFor = (text: string, plans: number) =>
    `p${generation}_${createHash('sha1').update(text).digest('hex').slice(0, 24)}${plans > 0 ? `_${plans}` : ''}`;

  return {
    /** The name to prepare `text` under, or undefined to run it unnamed. */
    nameOf(text: string): string | undefined {
      if (text.startsWith(PLANNED_PER_CALL)) return undefined;
      const named = names.get(text);
      if (named) {
        named.runs++;
        if (named.runs === replanAfterRuns[named.plans]) {
          named.plans++;
          named.name = nameFor(text, named.plans);
        }
        return named.name;
      }
      if (names.size >= maxStatements) return undefined;
      const count = (seen.get(text) ?? 0) + 1;
      if (count < 2) {
        if (seen.size > 10 * maxStatements) seen.clear();
        seen.set(text, count);
        return undefined;
      }
      seen.delete(text);
      const created = { name: nameFor(text, 0), runs: 1, plans: 0 };
      names.set(text, created);
      return created.name;
    },

    /**
     * A table's columns changed under a prepared `select *` ("cached plan must not change result
     * type"): that statement fails once, and runs under a new name from then on.
     */
    forgetIfStale(text: string, error: unknown): void {
      if (
        (error as { code?: string }).code !== '0A000' ||
        !/cached plan must not change result type/.test(String((error as Error).message))
      )
        return;
      names.delete(text);
      generation++;
    },
  };
}

export type StatementNamer = ReturnType<typeof createStatementNamer>;

type Query = (...args: unknown[]) => unknown;
type Callback = (error: unknown, result?: unknown) => void;

/** Makes every client of the pool run repeated statements as named prepared statements. */
export function preparingPool(pool: pg.Pool, namer: StatementNamer): pg.Pool {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = (text: unknown, values?: unknown, callback?: unknown) => {
      const name = typeof text === 'string' && Array.isArray(values) && values.length > 0 ? namer.nameOf(text) : undefined;
      if (!name) return query(text, values, callback);
      const config = { name, text, values };
      if (typeof callback === 'function') {
        return query(config, (error: unknown, result: unknown) => {
          if (error) namer.forgetIfStale(text as string, error);
          (callback as Callback)(error, result);
        });
      }
      return (query(config) as Promise<unknown>).catch((error: unknown) => {
        namer.forgetIfStale(text as string, error);
        throw error;
      });
    };
  });
  return pool;
}
