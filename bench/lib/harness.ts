import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

export const ROOT = join(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'server', 'src', 'cli.ts');

/**
 * What a running benchmark started: its processes and databases. A benchmark stopped by a signal
 * (a timeout, `kill`) stops them and drops them before it exits, so that no server it started goes on
 * polling beside the next benchmark, and no database of it is left behind. Ctrl-C reaches the child
 * processes anyway (the terminal signals the whole group); a signal sent to the benchmark alone does not.
 */
const children = new Set<ChildProcess>();
const databaseDrops = new Set<() => Promise<void>>();
/** How long a stopped benchmark waits for its databases to be dropped before it exits anyway. */
const TEARDOWN_MS = 10_000;

/** Registers a process that the benchmark started: it is stopped with the benchmark. */
export function ownChild<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Tells every process still running to stop (once: a process told is no longer the benchmark's to stop). */
const stopChildren = () => {
  for (const child of children) child.kill('SIGTERM');
  children.clear();
};
process.once('exit', stopChildren);
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  process.once(signal, () => {
    // The processes first: told to stop, they let go of the databases dropped next (by force if not yet).
    stopChildren();
    const drops = Promise.allSettled([...databaseDrops].map((drop) => drop()));
    const timeout = new Promise((resolve) => setTimeout(resolve, TEARDOWN_MS).unref());
    void Promise.race([drops, timeout]).then(() => process.exit(code));
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export async function load(options: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon({ duration: 10, connections: 50, ...options });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** A fresh database for one benchmark run: a new PostgreSQL database, or a PGlite data directory. */
export async function benchDatabase(
  kind: 'postgres' | 'pglite',
  adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ap-bench-'));
  const owned = (drop: () => Promise<void>) => {
    databaseDrops.add(drop);
    return async () => {
      databaseDrops.delete(drop);
      await drop();
    };
  };
  if (kind === 'pglite')
    return { env: { DATA_DIR: dataDir }, drop: owned(async () => rmSync(dataDir, { recursive: true, force: true })) };
  const name = `ap_bench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.href },
    drop: owned(async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    }),
  };
}

export async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({
    connectionString: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export function runCli(env: Record<string, string>, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = ownChild(
      spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] }),
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`cli ${args.join(' ')} failed: ${stderr}`))));
  });
}

/** Our server in its own process, like production. */
export async function startService(
  env: Record<string, string>,
): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = ownChild(
    spawn(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'warn', PORT: String(port), API_HOST: url, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  );
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('the service did not start');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { url, pid: child.pid!, stop: () => stopChild(child) };
}

/** A `worker` process (jobs only, no HTTP), once it says it runs. */
export async function startWorker(env: Record<string, string>): Promise<{ pid: number; stop: () => Promise<void> }> {
  const child = ownChild(
    spawn(process.execPath, [CLI, 'worker'], {
      env: { ...process.env, NODE_ENV: 'development', ...env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (!output.includes('Agent Platform worker running')) return;
      // From here on its log is not read: drained, so that the pipe never fills.
      child.stdout!.off('data', onData).resume();
      resolve();
    };
    child.stdout!.on('data', onData);
    child.once('exit', () => reject(new Error(`the worker exited while starting: ${output.slice(-2000)}`)));
  });
  return { pid: child.pid!, stop: () => stopChild(child) };
}

export async function startBareServer(): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = ownChild(fork(join(import.meta.dirname, 'bare-server.ts'), { env: { ...process.env, PORT: String(port) } }));
  await new Promise((resolve) => child.once('message', resolve));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => stopChild(child) };
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** A sender's signing time: the machine's clock, as a real sender's. */
export const sentNow = () => ({ nowSeconds: Math.floor(Date.now() / 1000) });

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
/** A ratio as a percentage to `digits` decimals. */
export const percentTo =
  (digits: number) =>
  (ratio: number): string =>
    `${(100 * ratio).toFixed(digits)}%`;
/** A ratio as a percentage to a tenth: to the whole percent, 29.6% of pgbench would read as a met 30%. */
export const percent = percentTo(1);

/** The middle value (of an odd count; the upper middle of an even one): a round's figure that one swing does not move. */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
