import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/** pgbench's single-row insert rate on the same PostgreSQL, as the database baseline of a run. */
export async function pgbenchInsertTps(adminUrl: string, clients = 16, seconds = 10): Promise<number> {
  const name = `ap_pgbench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new pg.Client({ connectionString: url.href });
  await db.connect();
  await db.query(
    'create table events (id bigserial primary key, payload jsonb not null, created_at timestamptz not null default now())',
  );
  await db.end();
  const script = join(tmpdir(), `${name}.sql`);
  writeFileSync(script, `insert into events (payload) values ('{"eventType":"order.created","externalId":"x"}');\n`);
  try {
    const { stdout } = await promisify(execFile)('pgbench', [
      '-n',
      '-c',
      String(clients),
      '-j',
      '2',
      '-T',
      String(seconds),
      '-f',
      script,
      '-h',
      url.hostname,
      '-p',
      url.port || '5432',
      '-U',
      decodeURIComponent(url.username || 'postgres'),
      name,
    ]);
    const tps = /tps = ([\d.]+)/.exec(stdout);
    if (!tps) throw new Error(`pgbench printed no tps: ${stdout}`);
    return Number(tps[1]);
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}
