import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.ts';

/**
 * A fresh database for one test file: in-memory PGlite, or a new PostgreSQL database created on
 * TEST_DATABASE_URL's server and dropped when closed.
 */
export async function createTestDatabase(): Promise<Database> {
  if (process.env.TEST_DB !== 'postgres') return openDatabase({ pgliteDataDir: 'memory://' });
  const { url, drop } = await createTestDatabaseUrl();
  const database = await openDatabase({ url, poolSize: 10 });
  return {
    ...database,
    async close() {
      await database.close();
      await drop();
    },
  };
}

/** A new, empty PostgreSQL database on TEST_DATABASE_URL's server, and how to drop it. */
export async function createTestDatabaseUrl(): Promise<{ url: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL!;
  const name = `ap_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await withAdmin(adminUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => withAdmin(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => {}) };
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
