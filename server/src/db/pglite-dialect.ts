import { AsyncLocalStorage } from 'node:async_hooks';
import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { PgliteQuery } from './pglite-query.ts';

/**
 * Where a statement on the service's handle would wait for the connection that the transaction it was
 * issued from holds: a wait that never ends, for that transaction and, behind it, every statement of
 * the process. It is refused at once instead (read through the transaction, or before opening it).
 */
export class PGliteSelfWaitError extends Error {
  constructor() {
    super(
      'PGlite has one connection, held by the open transaction this statement was issued from: it would wait ' +
        'for that transaction forever. Run it through the transaction, or before the transaction opens.',
    );
    this.name = 'PGliteSelfWaitError';
  }
}

/** The connection's state as seen by the code a holder (a transaction) runs: `held` from its grant to its release. */
interface Hold {
  state: 'new' | 'waiting' | 'held' | 'released';
}

/**
 * PGlite has one connection. Kysely's transactions and pg-boss's statements must take turns on it,
 * or a job query would land inside an open Kysely transaction. Both go through this one lock.
 */
export class PGliteLock {
  #tail: Promise<void> = Promise.resolve();
  readonly #holds = new AsyncLocalStorage<Hold>();

  /**
   * Runs `holder`, which takes the connection and keeps it across awaits (a transaction), so that a
   * statement on the lock issued by the code it runs, while it holds the connection, is refused with
   * PGliteSelfWaitError rather than left waiting for it.
   */
  holding<T>(holder: () => Promise<T>): Promise<T> {
    // A transaction opened by a holder's code would wait for that holder as a statement would.
    if (this.#holds.getStore()?.state === 'held') return Promise.reject(new PGliteSelfWaitError());
    return this.#holds.run({ state: 'new' }, holder);
  }

  /** Runs `fn` outside any holder's code: PGlite calls its listeners inside the statement that notified. */
  outsideHolders<T>(fn: () => T): T {
    return this.#holds.exit(fn);
  }

  /** Runs `fn` once every earlier holder has released the connection. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  acquire(): Promise<() => void> {
    const hold = this.#holds.getStore();
    if (hold?.state === 'held') return Promise.reject(new PGliteSelfWaitError());
    // The first acquire within `holding` is the holder's own.
    const own = hold?.state === 'new' ? hold : undefined;
    if (own) own.state = 'waiting';
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const acquired = this.#tail.then(() => {
      if (own) own.state = 'held';
      return own
        ? () => {
            own.state = 'released';
            release();
          }
        : release;
    });
    this.#tail = this.#tail.then(() => released);
    return acquired;
  }
}

/**
 * Makes each transaction and reserved connection of `db` a holder of `lock` (PGliteLock.holding): a
 * statement on `db` awaited inside one fails at once rather than hanging the process.
 */
export function holdingOnLock<D>(db: Kysely<D>, lock: PGliteLock): Kysely<D> {
  // Kysely's builders of both: `execute(callback)` runs the callback on the connection they take.
  const holdingBuilder = <B extends { execute(callback: never): Promise<unknown> }>(builder: B): B => {
    const execute = builder.execute.bind(builder) as (callback: never) => Promise<unknown>;
    builder.execute = ((callback: never) => lock.holding(() => execute(callback))) as B['execute'];
    return builder;
  };
  const openTransaction = db.transaction.bind(db);
  db.transaction = () => holdingBuilder(openTransaction());
  const reserveConnection = db.connection.bind(db);
  db.connection = () => holdingBuilder(reserveConnection());
  return db;
}

class PGliteConnection implements DatabaseConnection {
  readonly pglite: PGlite;
  readonly query: PgliteQuery;
  constructor(pglite: PGlite, query: PgliteQuery) {
    this.pglite = pglite;
    this.query = query;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    // The extended protocol takes one statement; parameterless SQL (migrations) may hold several.
    const result =
      compiledQuery.parameters.length > 0
        ? await this.query<R>(compiledQuery.sql, compiledQuery.parameters)
        : ((await this.pglite.exec(compiledQuery.sql)).at(-1) ?? { rows: [], affectedRows: undefined });
    return result.affectedRows === undefined
      ? { rows: result.rows as R[] }
      : { rows: result.rows as R[], numAffectedRows: BigInt(result.affectedRows) };
  }

  // biome-ignore lint/correctness/useYield: a driver must offer streaming; PGlite has none, so it only throws.
  async *streamQuery(): AsyncIterableIterator<QueryResult<never>> {
    throw new Error('Streaming queries are not supported on PGlite');
  }
}

class PGliteDriver implements Driver {
  readonly #connection: PGliteConnection;
  readonly #lock: PGliteLock;
  readonly #releases = new Map<DatabaseConnection, () => void>();

  constructor(pglite: PGlite, lock: PGliteLock, query: PgliteQuery) {
    this.#connection = new PGliteConnection(pglite, query);
    this.#lock = lock;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.#lock.acquire();
    this.#releases.set(this.#connection, release);
    return this.#connection;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const release = this.#releases.get(connection);
    this.#releases.delete(connection);
    release?.();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await connection.executeQuery(CompiledQuery.raw(`begin${isolation}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {}
}

export class PGliteDialect implements Dialect {
  readonly #pglite: PGlite;
  readonly #lock: PGliteLock;
  readonly #query: PgliteQuery;

  constructor(pglite: PGlite, lock: PGliteLock, query: PgliteQuery) {
    this.#pglite = pglite;
    this.#lock = lock;
    this.#query = query;
  }

  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver() {
    return new PGliteDriver(this.#pglite, this.#lock, this.#query);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
