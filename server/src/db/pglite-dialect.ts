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
 * PGlite has one connection. Kysely's transactions and pg-boss's statements must take turns on it,
 * or a job query would land inside an open Kysely transaction. Both go through this one lock.
 */
export class PGliteLock {
  #tail: Promise<void> = Promise.resolve();

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
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const acquired = this.#tail.then(() => release);
    this.#tail = this.#tail.then(() => released);
    return acquired;
  }
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
