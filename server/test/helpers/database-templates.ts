import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { pino } from 'pino';
import { databaseOnPglite, openDatabase, type Database } from '../../src/db/database.ts';
import { createProcessBus } from '../../src/lib/process-bus.ts';
import { createJobRunner } from '../../src/jobs/job-runner.ts';
import { loadConfig } from '../../src/config.ts';
import { createMetrics } from '../../src/lib/metrics.ts';

/** A database name nobody else uses on the test server. */
export const uniqueDatabaseName = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;

/** Migrates a database and creates the job queue's schema and queues, as a server's start does. */
async function prepare(database: Database): Promise<void> {
  await database.migrate();
  const logger = pino({ level: 'silent' });
  // No worker runs here: a bus that reaches no other process is enough.
  const jobs = createJobRunner({
    boss: database.jobsOptions,
    db: database.db,
    logger,
    metrics: createMetrics(),
    bus: createProcessBus({ logger }),
    // The queues' options as a server on its defaults makes them (its start updates them to its own).
    ...loadConfig({}).jobs,
  });
  await jobs.start();
  await jobs.stop(0); // nothing runs
}

/** Global setup: a migrated PGlite dumped to `file`. */
export async function buildPgliteTemplate(file: string): Promise<void> {
  const pglite = await PGlite.create('memory://');
  const database = databaseOnPglite(pglite);
  await prepare(database);
  const dump = await pglite.dumpDataDir('none');
  await writeFile(file, Buffer.from(await dump.arrayBuffer()));
  await database.close();
}

/** Global setup: a migrated PostgreSQL database to copy; returns its name and how to drop it. */
export async function buildPostgresTemplate(adminUrl: string): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = uniqueDatabaseName('ap_template');
  await withAdmin(adminUrl, (client) => client.query(`create database ${name}`));
  const database = await openDatabase({ url: databaseUrl(adminUrl, name), poolSize: 2 });
  try {
    await prepare(database);
  } finally {
    await database.close();
  }
  return { name, drop: () => dropDatabase(adminUrl, name) };
}

export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.href;
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withAdmin(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
}

export async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
