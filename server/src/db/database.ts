import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { CamelCasePlugin, Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import type { ConstructorOptions, Db as JobsDb } from 'pg-boss';
import { migrationProvider } from './migrations/index.ts';
import { holdingOnLock, PGliteDialect, PGliteLock } from './pglite-dialect.ts';
import { createPgliteMaintenance, type PgliteMaintenance } from './pglite-maintenance.ts';
import { createPgliteQuery } from './pglite-query.ts';
import { createStatementNamer, preparingPool } from './prepared.ts';
import type { DB } from './schema.ts';

export type DatabaseKind = 'pglite' | 'postgres';

export interface Database {
  readonly kind: DatabaseKind;
  readonly db: Kysely<DB>;
  /** The connection URL (PostgreSQL only): for listeners that need a connection of their own. */
  readonly url?: string;
  /** PGlite only: hears NOTIFY on `channel` from this same (embedded) database. */
  readonly listenInProcess?: (channel: string, handler: (payload: string) => void) => Promise<void>;
  /** How pg-boss reaches this same database. */
  readonly jobsOptions: ConstructorOptions;
  /** PGlite only: vacuums and analyzes its tables, as autovacuum does on a PostgreSQL server (closed with it). */
  readonly maintenance?: PgliteMaintenance;
  migrate(): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** postgres:// URL; when absent, PGlite runs embedded. */
  url?: string;
  /** PGlite data directory, or `memory://` for an in-memory database. */
  pgliteDataDir?: string;
  poolSize?: number;
}

/** The database a configuration names: its PostgreSQL, or PGlite in its data directory. */
export const configuredDatabase = (config: {
  databaseUrl?: string;
  databasePoolSize: number;
  dataDir: string;
}): DatabaseOptions => ({
  url: config.databaseUrl,
  poolSize: config.databasePoolSize,
  pgliteDataDir: join(config.dataDir, 'pglite'),
});

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.url ? openPostgres(options.url, options.poolSize ?? 10) : openPglite(options.pgliteDataDir ?? 'memory://');
}

/**
 * Column names are snake_case in SQL and camelCase in TypeScript. JSON values (payloads, tool inputs,
 * results) keep their own keys: a customer's `order_id` stays `order_id`.
 */
const camelCase = new CamelCasePlugin({ maintainNestedObjectKeys: true });

// pg parses timestamptz to Date already; int8 and numeric stay strings unless asked.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

function withCommon(
  kind: DatabaseKind,
  db: Kysely<DB>,
  jobsOptions: ConstructorOptions,
  close: () => Promise<void>,
  url?: string,
): Database {
  return {
    kind,
    db,
    url,
    jobsOptions,
    async migrate() {
      const migrator = new Migrator({ db, provider: migrationProvider });
      const { error, results } = await migrator.migrateToLatest();
      const failed = results?.find((result) => result.status === 'Error');
      if (error || failed) {
        throw new Error(
          `Migration ${failed?.migrationName ?? ''} failed: ${String((error as Error | undefined)?.message ?? error)}`,
          {
            cause: error,
          },
        );
      }
    },
    async ping() {
      await sql`select 1`.execute(db);
    },
    close,
  };
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const namer = createStatementNamer();
  const pool = preparingPool(new pg.Pool({ connectionString: url, max: poolSize }), namer);
  // pg-boss runs on a pool of ours, so that its fetch and complete statements are prepared too.
  const jobsPool = preparingPool(new pg.Pool({ connectionString: url, max: 4 }), namer);
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  jobsPool.on('error', () => {});
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), plugins: [camelCase] });
  const jobsOptions: ConstructorOptions = { db: { executeSql: (text, values) => jobsPool.query(text, values) } };
  return withCommon(
    'postgres',
    db,
    jobsOptions,
    async () => {
      await db.destroy();
      await jobsPool.end();
    },
    url,
  );
}

async function openPglite(dataDir: string): Promise<Database> {
  return databaseOnPglite(await PGlite.create(dataDir));
}

/** A Database over an open PGlite (the caller may have restored it from a dump); closing it closes PGlite. */
export function databaseOnPglite(pglite: PGlite): Database {
  const lock = new PGliteLock();
  // One connection: one namer for Kysely's statements and pg-boss's.
  const query = createPgliteQuery(pglite, createStatementNamer());
  const db = holdingOnLock(new Kysely<DB>({ dialect: new PGliteDialect(pglite, lock, query), plugins: [camelCase] }), lock);
  const jobsDb: JobsDb = {
    // pg-boss sends parameterless multi-statement scripts (exec) and single statements (query).
    // An error inside its BEGIN ... COMMIT blocks must not leave the shared connection aborted,
    // so the rollback happens before the lock is released.
    executeSql: (text, values) =>
      lock.run(async () => {
        try {
          if (values?.length) return await query(text, values);
          const results = await pglite.exec(text);
          return { rows: results.flatMap((result) => result.rows) };
        } catch (error) {
          await pglite.query('rollback').catch(() => {});
          throw error;
        }
      }),
  };
  const jobsOptions: ConstructorOptions = { db: jobsDb, backend: 'pglite' };
  const maintenance = createPgliteMaintenance({ pglite, lock });
  const database = withCommon('pglite', db, jobsOptions, async () => {
    await maintenance.stop();
    await db.destroy();
    await pglite.close();
  });
  // LISTEN takes its turn on the one connection: inside someone's transaction it would die with a rollback.
  const listenInProcess = async (channel: string, handler: (payload: string) => void) => {
    // Called inside the statement that notified, maybe a transaction's commit: the handler is not that transaction's code.
    await lock.run(() => pglite.listen(channel, (payload) => lock.outsideHolders(() => handler(payload))));
  };
  return { ...database, listenInProcess, maintenance };
}
