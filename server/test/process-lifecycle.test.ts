import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from './helpers/eventually.ts';
import { freePort } from './helpers/http.ts';
import {
  killServerProcess,
  serverProcessEnvironment,
  startServerProcess,
  startWorkerProcess,
  waitForReady,
} from './helpers/server-process.ts';

const CLI = join(import.meta.dirname, '../src/cli.ts');
const REPO = join(import.meta.dirname, '../..');
const STRAY_REJECTION = join(import.meta.dirname, 'fixtures/stray-rejection.ts');

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('a server process', () => {
  it('logs and counts a promise rejection nothing handled, and goes on serving', { timeout: 90_000 }, async () => {
    const environment = await serverProcessEnvironment();
    cleanups.push(environment.cleanup);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = spawn(process.execPath, ['--import', STRAY_REJECTION, CLI, 'serve'], {
      env: { ...environment.env, PORT: String(port), API_HOST: base },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => killServerProcess(server));
    let output = '';
    server.stdout!.on('data', (chunk) => (output += chunk));
    server.stderr!.on('data', (chunk) => (output += chunk));
    await waitForReady(base, server);
    const counted = async () => /^unhandled_rejections_total (\d+)$/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1];
    expect(await counted()).toBe('0');

    server.kill('SIGUSR2');
    await eventually('the rejection to be counted', async () => ((await counted()) === '1' ? true : undefined));
    expect(server.exitCode).toBeNull();
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const logged = output
      .split('\n')
      .filter((line) => line.includes('unhandled promise rejection'))
      .map((line) => JSON.parse(line));
    expect(logged).toEqual([
      expect.objectContaining({ level: 50, err: expect.objectContaining({ message: 'a stray rejection the test made' }) }),
    ]);
  });
});

describe("a server's accept queue", () => {
  const somaxconn = (() => {
    try {
      return Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    } catch {
      return 0;
    }
  })();

  // Senders that connect while the event loop is busy wait in the kernel's queue; past Node's default
  // (511) their SYNs were dropped and sent again 1, 3, 7, 15 s later.
  it.skipIf(somaxconn < 2_048)('holds 1,500 connections made while the process cannot accept', { timeout: 90_000 }, async () => {
    const environment = await serverProcessEnvironment();
    cleanups.push(environment.cleanup);
    const port = await freePort();
    const server = await startServerProcess(environment.env, port);
    cleanups.push(() => killServerProcess(server));
    server.kill('SIGSTOP');
    cleanups.push(() => void server.kill('SIGCONT'));
    const sockets: Socket[] = [];
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
    });
    let connected = 0;
    for (let i = 0; i < 1_500; i++) {
      const socket = connect(port, '127.0.0.1', () => connected++);
      socket.on('error', () => {});
      sockets.push(socket);
    }
    await eventually('every connection to be queued', async () => (connected === 1_500 ? true : undefined), 10_000);
    server.kill('SIGCONT');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });
});

describe('a worker process', () => {
  it('runs at WORKER_NICENESS, below the serve processes it shares a machine with', { timeout: 90_000 }, async () => {
    const environment = await serverProcessEnvironment({ WORKER_NICENESS: '7' });
    cleanups.push(environment.cleanup);
    const worker = await startWorkerProcess(environment.env);
    cleanups.push(() => killServerProcess(worker));
    expect(getPriority(worker.pid!)).toBe(7);
  });
});

/** `npm start` as a person runs it, in a process group of its own (as a terminal's foreground job). */
async function npmStart() {
  const environment = await serverProcessEnvironment({ LOG_LEVEL: 'info' });
  cleanups.push(environment.cleanup);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const npm = spawn('npm', ['start'], {
    cwd: REPO,
    env: { ...environment.env, PORT: String(port), API_HOST: base },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const output = { text: '' };
  npm.stdout!.on('data', (chunk) => (output.text += chunk));
  npm.stderr!.on('data', (chunk) => (output.text += chunk));
  cleanups.push(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {}
  });
  await waitForReady(base, npm);
  return { npm, base, output };
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  );
const refused = async (base: string) =>
  fetch(`${base}/healthz`).then(
    () => false,
    () => true,
  );

describe('npm start', () => {
  it('stops the service, gracefully, on a SIGTERM to the process npm start started', { timeout: 90_000 }, async () => {
    const { npm, base, output } = await npmStart();
    npm.kill('SIGTERM');
    await exited(npm);
    // Nothing of the service is left: the port is free, and the server said it shut down.
    await eventually('the port to be free', async () => ((await refused(base)) ? true : undefined));
    expect(output.text).toMatch(/"signal":"SIGTERM","msg":"shutting down"/);
  });

  it('stops it on Ctrl-C (SIGINT to the whole group, which npm passes on once more)', { timeout: 90_000 }, async () => {
    const { npm, base, output } = await npmStart();
    process.kill(-npm.pid!, 'SIGINT');
    await exited(npm);
    await eventually('the port to be free', async () => ((await refused(base)) ? true : undefined));
    expect(output.text.match(/"msg":"shutting down"/g)).toHaveLength(1);
    expect(output.text).not.toMatch(/shutdown failed|timed out/);
  });
});
