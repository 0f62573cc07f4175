import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../server/test/helpers/http.ts';
import { ownChild } from './harness.ts';

const CLI = join(import.meta.dirname, '..', '..', 'server', 'src', 'cli.ts');

export interface DeployedProcess {
  name: string;
  kind: 'serve' | 'worker';
  /** serve only: its base URL (kept across restarts). */
  url?: string;
  child?: ChildProcess;
  /** Up and (serve) ready. */
  up: boolean;
}

async function waitForReady(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${url}: the process exited while starting`);
    const ready = await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`${url} was not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The deployment under test: `serve` processes without workers and `worker` processes, all on one
 * PostgreSQL, each restartable after a SIGKILL. Their stderr goes to one log file.
 */
export async function startDeployment(options: {
  env: Record<string, string>;
  serves: number;
  workers: number;
  logFile: string;
}) {
  const log: WriteStream = createWriteStream(options.logFile, { flags: 'a' });
  const processes: DeployedProcess[] = [];
  for (let i = 0; i < options.serves; i++) {
    const port = await freePort();
    processes.push({ name: `serve-${i + 1}`, kind: 'serve', url: `http://127.0.0.1:${port}`, up: false });
  }
  for (let i = 0; i < options.workers; i++) processes.push({ name: `worker-${i + 1}`, kind: 'worker', up: false });

  async function start(process_: DeployedProcess): Promise<void> {
    const port = process_.url ? new URL(process_.url).port : undefined;
    const child = ownChild(
      spawn(globalThis.process.execPath, [CLI, process_.kind], {
        env: {
          ...options.env,
          RUN_WORKERS: 'false',
          ...(port ? { PORT: port, API_HOST: process_.url! } : {}),
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    );
    child.stderr!.on('data', (chunk: Buffer) => log.write(`[${process_.name}] ${chunk}`));
    child.once('exit', () => (process_.up = false));
    process_.child = child;
    // A worker serves nothing: it is up once spawned (its jobs wait in the database meanwhile).
    if (process_.url) await waitForReady(process_.url, child);
    process_.up = true;
  }

  // The first process migrates the database; the others start once it has.
  await start(processes[0]!);
  await Promise.all(processes.slice(1).map(start));

  return {
    processes,
    serves: processes.filter((p) => p.kind === 'serve'),
    /** The processes' ids now (they change when one is restarted). */
    pids: () => processes.flatMap(({ child }) => (child?.pid ? [child.pid] : [])),
    /**
     * Stops it with `signal` (SIGTERM: it drains, and is SIGKILLed after `graceMs`), then starts it
     * again (a serve on its port, once ready). Returns how it exited: its code, or the signal that ended it.
     */
    async restart(
      process_: DeployedProcess,
      options: { signal: 'SIGKILL' | 'SIGTERM'; downMs: number; graceMs?: number },
    ): Promise<number | string> {
      const child = process_.child!;
      process_.up = false;
      let exit: number | string = 'not running';
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<number | string>((resolve) =>
          child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
        );
        child.kill(options.signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), options.graceMs ?? 30_000);
        exit = await exited;
        clearTimeout(timer);
      }
      await new Promise((resolve) => setTimeout(resolve, options.downMs));
      await start(process_);
      return exit;
    },
    /** SIGTERM to each (they drain), then SIGKILL whatever is left after `graceMs`. */
    async stop(graceMs = 30_000): Promise<void> {
      await Promise.all(
        processes.map(async ({ child }) => {
          if (!child || child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          await exited;
          clearTimeout(timer);
        }),
      );
      await new Promise((resolve) => log.end(resolve));
    },
  };
}

export type Deployment = Awaited<ReturnType<typeof startDeployment>>;
