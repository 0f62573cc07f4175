import { type CompiledQuery, createQueryId, type Kysely, NoResultError, type QueryResult } from 'kysely';
import type { DB } from './schema.ts';

/** Stands for one argument of a template while its query is built. */
class Slot {
  readonly key: string;
  constructor(key: string) {
    this.key = key;
  }
}

interface Compiled {
  sql: string;
  query: CompiledQuery['query'];
  /** Each parameter: the argument it binds, or a constant the builder wrote. */
  sources: unknown[];
}

/**
 * A query whose SQL is the same at every call, only its values change: kysely builds and compiles it
 * once, on the first call, with a stand-in for each argument, and each call binds its own arguments.
 * Building and compiling every query anew was a seventh of the email worker's CPU
 * (docs/benchmarks.md). The builder gets the stand-ins, so it must use its arguments as values only:
 * no branching on them and no `in` lists (`= any(...)` on an array argument). One that does fails on
 * its first call. Every database of the service compiles alike (PostgreSQL's SQL, snake_case
 * columns), so one compiled text serves them all.
 */
export function queryTemplate<A extends Record<string, unknown>, R>(
  build: (db: Kysely<DB>, args: A) => { compile(): CompiledQuery<R> },
) {
  let compiled: Compiled | undefined;
  const compile = (db: Kysely<DB>): Compiled => {
    const handedOut: Slot[] = [];
    const args = new Proxy({} as A, {
      get: (_target, key) => {
        if (typeof key !== 'string') return undefined;
        const slot = new Slot(key);
        handedOut.push(slot);
        return slot;
      },
    });
    const query = build(db, args).compile();
    // Each argument the builder read must be bound as a value: one it branched on, measured, or wrote
    // into the text would not change the query from call to call.
    const bound = new Set(query.parameters);
    const unbound = handedOut.filter((slot) => !bound.has(slot)).map((slot) => slot.key);
    if (unbound.length > 0) throw new Error(`A query template used arguments other than as values: ${unbound.join(', ')}`);
    return { sql: query.sql, query: query.query, sources: [...query.parameters] };
  };

  const run = (db: Kysely<DB>, args: A): Promise<QueryResult<R>> => {
    compiled ??= compile(db);
    const parameters = compiled.sources.map((source) => (source instanceof Slot ? args[source.key] : source));
    return db.executeQuery<R>({ sql: compiled.sql, query: compiled.query, parameters, queryId: createQueryId() });
  };

  return {
    /** Every row. */
    rows: async (db: Kysely<DB>, args: A): Promise<R[]> => (await run(db, args)).rows,
    /** The first row, if any. */
    first: async (db: Kysely<DB>, args: A): Promise<R | undefined> => (await run(db, args)).rows[0],
    /** The first row; none is an error, as kysely's executeTakeFirstOrThrow. */
    only: async (db: Kysely<DB>, args: A): Promise<R> => {
      const [row] = (await run(db, args)).rows;
      if (row === undefined) throw new NoResultError(compiled!.query as ConstructorParameters<typeof NoResultError>[0]);
      return row;
    },
  };
}

/**
 * The named properties of a template's arguments, as an object to insert or set (a template's
 * arguments are stand-ins with no properties of their own to spread).
 */
export function valuesOf<A extends Record<string, unknown>, K extends keyof A & string>(args: A, keys: readonly K[]): Pick<A, K> {
  const values = {} as Pick<A, K>;
  for (const key of keys) values[key] = args[key];
  return values;
}
