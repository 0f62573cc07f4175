import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from './helpers/eventually.ts';
import { freePort } from './helpers/http.ts';
import { killServerProcess, waitForReady } from './helpers/server-process.ts';
import { createTestDatabaseUrl } from './helpers/test-database.ts';

const CLI = join(import.meta.dirname, '../src/cli.ts');
const onPostgres = process.env.TEST_DB === 'postgres';
// Each test starts several Node processes, on 2 cores beside the rest of the suite.
const TIMEOUT_MS = 120_000;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An empty working directory, as a production host's: read-only (a root test process can still write it, so what it holds is checked too). */
function readOnlyDirectory() {
  const dir = mkdtempSync(join(tmpdir(), 'ap-cwd-'));
  chmodSync(dir, 0o555);
  cleanups.push(() => {
    chmodSync(dir, 0o755);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

function startProcess(command: 'serve' | 'worker', cwd: string, env: Record<string, string>, port?: number) {
  const child = spawn(process.execPath, [CLI, command], {
    cwd,
    env: port ? { ...env, PORT: String(port), API_HOST: `http://127.0.0.1:${port}` } : env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { text: '' };
  child.stdout!.on('data', (chunk) => (output.text += chunk));
  child.stderr!.on('data', (chunk) => (output.text += chunk));
  cleanups.push(() => killServerProcess(child));
  return { child, output };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.once('exit', resolve),
  );

describe('deployment', () => {
  it.runIf(onPostgres)(
    'serve and worker start on PostgreSQL from a directory they cannot write, write nothing there, and two serves share it',
    async () => {
      const database = await createTestDatabaseUrl();
      cleanups.push(database.drop);
      const cwd = readOnlyDirectory();
      // The operations guide's production shape: no DATA_DIR, no ./data, a master key and PostgreSQL.
      const env = {
        PATH: process.env.PATH!,
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: database.url,
        ENCRYPTION_MASTER_KEY: 'k'.repeat(43),
        LOG_LEVEL: 'info',
      };
      const [first, second] = await Promise.all([freePort(), freePort()]);
      const serves = [startProcess('serve', cwd, env, first), startProcess('serve', cwd, env, second)];
      const worker = startProcess('worker', cwd, { ...env, RUN_WORKERS: 'true' });
      await Promise.all(serves.map(({ child }, i) => waitForReady(`http://127.0.0.1:${[first, second][i]}`, child)));
      await eventually('the worker to run', () => {
        if (worker.child.exitCode !== null) throw new Error(`worker exited ${worker.child.exitCode}: ${worker.output.text}`);
        return worker.output.text.includes('Agent Platform worker running') ? true : undefined;
      });
      // The start-up hint names the database the CLI must reach.
      await eventually('the first-admin hint', () => (serves[0]!.output.text.includes('No users yet.') ? true : undefined));
      expect(serves[0]!.output.text).toContain('DATABASE_URL=');

      // The CLI reaches PostgreSQL itself, from the same directory, and both serves see what it wrote.
      const created = spawnSync(process.execPath, [CLI, 'orgs', 'create', '--slug', 'acme', '--name', 'Acme'], {
        cwd,
        env,
        encoding: 'utf8',
      });
      expect(created.status, created.stderr).toBe(0);
      expect(created.stdout).toMatch(/Created organization acme/);

      // One serve stopping leaves the other serving.
      serves[0]!.child.kill('SIGTERM');
      expect(await exited(serves[0]!.child)).toBe(0);
      expect((await fetch(`http://127.0.0.1:${second}/readyz`)).status).toBe(200);
      expect(readdirSync(cwd)).toEqual([]);
      for (const { output } of [...serves, worker]) expect(output.text).not.toMatch(/EACCES|ENOENT|admin\.sock/);
    },
    TIMEOUT_MS,
  );

  it.runIf(!onPostgres)(
    'two serves started at once on one embedded data directory: one serves, the other is refused before it opens the database',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'ap-data-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const env = { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
      const ports = await Promise.all([freePort(), freePort()]);
      const serves = ports.map((port) => startProcess('serve', dataDir, env, port));
      const refused = await eventually(
        'one of the two to be refused',
        () => {
          const index = serves.findIndex(({ child }) => child.exitCode !== null);
          return index >= 0 ? index : undefined;
        },
        60_000,
      );
      const winner = serves[1 - refused]!;
      expect(serves[refused]!.child.exitCode).toBe(1);
      expect(serves[refused]!.output.text).toMatch(/Another agent-platform process is serving from/);
      await waitForReady(`http://127.0.0.1:${ports[1 - refused]}`, winner.child);

      // The refused one took nothing: an admin command reaches the one serving.
      const created = spawnSync(process.execPath, [CLI, 'orgs', 'create', '--slug', 'acme', '--name', 'Acme'], {
        env,
        encoding: 'utf8',
      });
      expect(created.status, created.stderr).toBe(0);
      expect(created.stderr).toBe('');

      // Its socket goes with it; a socket left by a killed server is taken by the next one.
      winner.child.kill('SIGTERM');
      expect(await exited(winner.child)).toBe(0);
      expect(existsSync(join(dataDir, 'admin.sock'))).toBe(false);
      const killed = startProcess('serve', dataDir, env, ports[0]);
      await waitForReady(`http://127.0.0.1:${ports[0]}`, killed.child);
      await killServerProcess(killed.child);
      expect(existsSync(join(dataDir, 'admin.sock'))).toBe(true);
      const next = startProcess('serve', dataDir, env, ports[1]);
      await waitForReady(`http://127.0.0.1:${ports[1]}`, next.child);
    },
    TIMEOUT_MS,
  );
});
