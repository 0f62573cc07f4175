import { createHash } from 'node:crypto';
import { sql } from 'kysely';
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
 * after 1,000, 10,000, 100,000 and 1,000,000 runs: planned at the sizes of its tables then. And
 * sooner when a run is slow: a plan that scans a growing table slows its own runs, so the run count
 * can take minutes to come (the run claim planned on an empty `actions` scanned it for 25 s of
 * bench:actions, up to 1.3 s a claim). A run over `slowRunMs` (50) gets the statement a new plan once
 * `slowReplanEveryMs` (10 s) have passed since its last, then 100 s, 1,000 s and so on: a statement
 * slow whatever its plan (a commit waiting for a slow disk) is planned again ever more rarely, and each
 * connection holds a handful of names for it, not one more every 10 s.
 */
const REPLAN_AFTER_RUNS = [1_000, 10_000, 100_000, 1_000_000];

/**
 * Begins a statement whose good plan depends on its parameters' values: the rows it takes as arrays
 * (their count is known to the planner only from the values). It is not prepared, so PostgreSQL plans
 * it for each call with the values in hand, never with a generic plan made once. Planning a large
 * statement costs about a millisecond: worth it for a batch, not for one row (writeActions).
 */
export const PLANNED_PER_CALL = '/* planned per call */';

/**
 * Ids as an array the planner cannot count (behind a scalar subquery), for a prepared statement that
 * takes a few of them per call: `= any(${uncountedIds(ids)})`, or the first array of an unnest. Counted,
 * a custom plan for a few ids always looks cheaper than the generic plan, so PostgreSQL plans the
 * statement again at every call (999 custom plans in 999 runs of the runs' writes, about 0.5 ms each;
 * every load of run contexts: docs/benchmarks.md). Uncounted, it takes the generic plan after its
 * first five runs, as for any other statement.
 */
export const uncountedIds = (ids: readonly string[]) => sql<string[]>`(select ${ids}::uuid[])::uuid[]`;

interface NamerOptions {
  maxStatements?: number;
  replanAfterRuns?: number[];
  slowRunMs?: number;
  slowReplanEveryMs?: number;
  /** Milliseconds on a monotonic clock. */
  now?: () => number;
}

interface Named {
  name: string;
  runs: number;
  /** How many of `replanAfterRuns` its runs have passed. */
  thresholdsPassed: number;
  /** How many times a slow run got it a new plan. */
  slowReplans: number;
  plannedAt: number;
}

export function createStatementNamer(options: NamerOptions = {}) {
  const maxStatements = options.maxStatements ?? 300;
  const replanAfterRuns = options.replanAfterRuns ?? REPLAN_AFTER_RUNS;
  const slowRunMs = options.slowRunMs ?? 50;
  const slowReplanEveryMs = options.slowReplanEveryMs ?? 10_000;
  const now = options.now ?? (() => performance.now());
  const seen = new Map<string, number>();
  const names = new Map<string, Named>();
  let generation = 0;
  const nameFor = (text: string, plans: number) =>
    `p${generation}_${createHash('sha1').update(text).digest('hex').slice(0, 24)}${plans > 0 ? `_${plans}` : ''}`;
  // Each plan after the first is one more run threshold passed or one more slow run answered.
  const replan = (text: string, named: Named) => {
    named.name = nameFor(text, named.thresholdsPassed + named.slowReplans);
    named.plannedAt = now();
  };

  return {
    /** The name to prepare `text` under, or undefined to run it unnamed. */
    nameOf(text: string): string | undefined {
      if (text.startsWith(PLANNED_PER_CALL)) return undefined;
      const named = names.get(text);
      if (named) {
        named.runs++;
        if (named.runs === replanAfterRuns[named.thresholdsPassed]) {
          named.thresholdsPassed++;
          replan(text, named);
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
      const created = { name: nameFor(text, 0), runs: 1, thresholdsPassed: 0, slowReplans: 0, plannedAt: now() };
      names.set(text, created);
      return created.name;
    },

    /** A run of `text` under `name` took `ms`: a slow one gets the statement a new plan (ever more rarely). */
    ran(text: string, name: string, ms: number): void {
      if (ms < slowRunMs) return;
      const named = names.get(text);
      // A run of a name already replaced says nothing of the new plan.
      if (named?.name !== name || now() - named.plannedAt < slowReplanEveryMs * 10 ** named.slowReplans) return;
      named.slowReplans++;
      replan(text, named);
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
      const startedAt = performance.now();
      const settled = (error: unknown) => {
        if (error) namer.forgetIfStale(text as string, error);
        else namer.ran(text as string, name, performance.now() - startedAt);
      };
      if (typeof callback === 'function') {
        return query(config, (error: unknown, result: unknown) => {
          settled(error);
          (callback as Callback)(error, result);
        });
      }
      return (query(config) as Promise<unknown>).then(
        (result) => {
          settled(undefined);
          return result;
        },
        (error: unknown) => {
          settled(error);
          throw error;
        },
      );
    };
  });
  return pool;
}
