import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished, TestRunner } from 'vitest';
import { eventually } from './eventually.ts';
import { signingHeaders } from '../../src/features/ingest/verification.ts';
import { setCookies } from './http.ts';
import { createTestDatabaseUrl } from './test-database.ts';

const CLI = join(import.meta.dirname, '../../src/cli.ts');

/**
 * The real server as its own process (`cli.ts serve`), for tests that kill it: a data directory and,
 * on the PostgreSQL pass, a fresh database. Call `cleanup` when done.
 */
export async function serverProcessEnvironment(extra: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'ap-proc-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'development',
    ...extra,
  };
  let drop = async () => {};
  if (process.env.TEST_DB === 'postgres') {
    const database = await createTestDatabaseUrl();
    env.DATABASE_URL = database.url;
    drop = database.drop;
  }
  const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
  return {
    env,
    cli,
    /** Org `acme` with an Admin, made with the CLI as an operator would (the server must be running); returns the login. */
    createAdmin() {
      const credentials = { email: 'ops@acme.example', password: 'a long password' };
      for (const args of [
        ['orgs', 'create', '--slug', 'acme', '--name', 'Acme'],
        ['users', 'create', '--email', credentials.email, '--password', credentials.password, '--role', 'Admin', '--org', 'acme'],
      ]) {
        const run = cli(...args);
        if (run.status !== 0) throw new Error(`cli ${args.join(' ')} failed: ${run.stderr}`);
      }
      return credentials;
    },
    async cleanup() {
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A process started inside a test is killed when that test ends, also when it times out with its
 * awaits still pending: a `finally` is not reached then, and the process would outlive the database
 * that afterAll drops. One started in a beforeAll is the file's, which ends it in its afterAll.
 */
export function endsWithTest<T extends ChildProcess>(child: T): T {
  if (TestRunner.getCurrentTest()) onTestFinished(() => killServerProcess(child));
  return child;
}

/** Starts `serve` on the port and waits until it is ready; started in a test, it ends with the test. */
export async function startServerProcess(env: Record<string, string>, port: number): Promise<ChildProcess> {
  const server = endsWithTest(
    spawn(process.execPath, [CLI, 'serve'], {
      env: { ...env, PORT: String(port), API_HOST: `http://127.0.0.1:${port}` },
      stdio: 'ignore',
    }),
  );
  await waitForReady(`http://127.0.0.1:${port}`, server);
  return server;
}

/** Starts `worker` (jobs only, no HTTP) and waits until it says it runs; fails at once if it exits. Ends with its test. */
export async function startWorkerProcess(env: Record<string, string>): Promise<ChildProcess> {
  const worker = endsWithTest(
    spawn(process.execPath, [CLI, 'worker'], {
      env: { ...env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  worker.stdout!.on('data', (chunk) => (output += chunk));
  worker.stderr!.on('data', (chunk) => (output += chunk));
  await eventually('the worker to run', () => {
    if (worker.exitCode !== null) throw new Error(`worker exited with ${worker.exitCode}: ${output}`);
    return output.includes('Agent Platform worker running') ? true : undefined;
  });
  return worker;
}

/** Waits until a started server process answers /readyz; fails at once if it exits. */
export async function waitForReady(baseUrl: string, server: ChildProcess): Promise<void> {
  await eventually(
    `${baseUrl} to be ready`,
    async () => {
      if (server.exitCode !== null) throw new Error(`server exited with ${server.exitCode}`);
      const ready = await fetch(`${baseUrl}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      return ready ? true : undefined;
    },
    // An embedded database's first start (initdb, migrations) takes 10 s on an idle 2-core machine,
    // and several times that while the other test files load it.
    120_000,
  );
}

export async function killServerProcess(server: ChildProcess): Promise<void> {
  // A process ended by a signal keeps exitCode null.
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGKILL');
  await exited;
}

/** Posts an event signed for the webhook (`wh`) to a server process, as a sender would; returns the action's id. */
export async function postSignedEvent(
  base: string,
  webhook: { url: string; secret: string },
  payload: Record<string, unknown>,
): Promise<string> {
  const body = JSON.stringify(payload);
  const response = await fetch(`${base}${new URL(webhook.url).pathname}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...signingHeaders('wh', webhook.secret, body, { nowSeconds: Math.floor(Date.now() / 1000) }),
    },
    body,
  });
  return ((await response.json()) as { actionId: string }).actionId;
}

/** Signs in over HTTP and returns a JSON client that sends the session as Bearer. */
export async function apiClient(base: string, credentials: { email: string; password: string }) {
  const login = await fetch(`${base}/auth/login/credentials`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(credentials),
  });
  const token = setCookies(login).get('session')!.value;
  return async (method: string, path: string, body?: unknown): Promise<any> =>
    (
      await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    ).json();
}

/**
 * An agent with `tools`, a rule with `approvalRules` (notifying on the `notify` channels) and a webhook in org
 * `acme`, run as the signed-in admin; returns the webhook as created.
 */
export async function createWebhookThroughApi(
  api: Awaited<ReturnType<typeof apiClient>>,
  agent: { tools: string[]; approvalRules?: Record<string, string>; notify?: string[] },
  webhook: Record<string, unknown> = {},
) {
  const me = await api('GET', '/auth/me');
  const { id: agentId } = await api('POST', '/orgs/acme/agents', { name: 'Clerk', tools: agent.tools });
  const rule = await api('POST', '/orgs/acme/action-rules', {
    name: 'r',
    agentId,
    approvalRules: agent.approvalRules ?? {},
    notify: agent.notify ?? [],
  });
  return api('POST', '/orgs/acme/webhooks', { name: 'w', actionRuleId: rule.id, runAsUserId: me.id, ...webhook });
}
