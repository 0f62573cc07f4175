import { readFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { databaseOnPglite, openDatabase, type Database } from '../../src/db/database.ts';
import { databaseUrl, dropDatabase, uniqueDatabaseName, withAdmin } from './database-templates.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A file holding a dump of a migrated PGlite (with the job queue's schema). */
    pgliteTemplateFile: string;
    /** A migrated PostgreSQL database on TEST_DATABASE_URL's server to copy, when it is reachable. */
    postgresTemplateDatabase: string | undefined;
  }
}

/** The template's dump, read once per worker (its files share one module graph). */
let pgliteDump: Promise<Blob> | undefined;

/**
 * A fresh database for one test file: in-memory PGlite, or a new PostgreSQL database created on
 * TEST_DATABASE_URL's server and dropped when closed. Both start as copies of a database that the
 * global setup migrated once (initdb and the migrations took 2-5 s per file on 2 cores).
 */
export async function createTestDatabase(): Promise<Database> {
  if (process.env.TEST_DB !== 'postgres') {
    pgliteDump ??= readFile(inject('pgliteTemplateFile')).then((bytes) => new Blob([bytes]));
    return databaseOnPglite(await PGlite.create({ loadDataDir: await pgliteDump }));
  }
  const { url, drop } = await createTestDatabaseUrl({ template: inject('postgresTemplateDatabase') });
  const database = await openDatabase({ url, poolSize: 10 });
  return {
    ...database,
    async close() {
      await database.close();
      await drop();
    },
  };
}

/** A new PostgreSQL database on TEST_DATABASE_URL's server (empty, or a copy of `template`), and how to drop it. */
export async function createTestDatabaseUrl(
  options: { template?: string } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL!;
  const name = uniqueDatabaseName('ap_test');
  await withAdmin(adminUrl, (client) =>
    client.query(`create database ${name}${options.template ? ` template ${options.template}` : ''}`),
  );
  return { url: databaseUrl(adminUrl, name), drop: () => dropDatabase(adminUrl, name) };
}
