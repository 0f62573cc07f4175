import { buildApp } from '../../src/app.ts';
import { loadConfig, type Env } from '../../src/config.ts';
import { createContainer, type Container, type ContainerOptions } from '../../src/container.ts';
import { TestClock } from './clock.ts';
import { reservePort } from './http.ts';
import { createTestDatabase } from './test-database.ts';

export const TEST_APP_HOST = 'http://app.test';

/**
 * For the tests of work that comes due at a time (a deadline, a retry's backoff, a lapsed lease), or of
 * containers sharing one PGlite database (whose work signals stay in their container): the poll finds it.
 */
export const POLL_FOR_DUE_WORK = { JOB_POLL_SECONDS: '2' } as const;

/** A fetch Response whose JSON body tests read freely (assertions check its shape). */
export type TestResponse = Omit<Response, 'json'> & { json(): Promise<any> };

export interface TestApp {
  container: Container;
  clock: TestClock;
  baseUrl: string;
  /** fetch against the app; `token` goes as Bearer, `cookie` as the session cookie. */
  request(
    method: string,
    path: string,
    options?: {
      body?: unknown;
      token?: string;
      cookie?: string;
      headers?: Record<string, string>;
      redirect?: 'manual' | 'follow' | 'error';
    },
  ): Promise<TestResponse>;
  close(): Promise<void>;
}

/**
 * The real app on a real HTTP port, over a fresh database (PGlite or PostgreSQL, by TEST_DB),
 * with the job workers running. One per test file; tests isolate themselves with fresh tenants.
 */
export async function startTestApp(
  env: Partial<Record<keyof Env, string>> = {},
  options: {
    routes?: (app: Awaited<ReturnType<typeof buildApp>>, container: Container) => void;
    /** Another app's database, to stand for a second process on it (it is not closed by this app). */
    shareDatabaseWith?: TestApp;
    /** false: this process serves HTTP only, like `serve` with RUN_WORKERS=false (actions stay queued). */
    workers?: boolean;
    /** APP_HOST is this server's own origin: it serves the console (built by the caller). */
    serveConsole?: boolean;
    /** Where the app logs (a test that reads its logs: log-capture.ts). */
    logger?: ContainerOptions['logger'];
  } = {},
): Promise<TestApp> {
  const { port, release } = await reservePort();
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ENCRYPTION_MASTER_KEY: 'test-master-key-0123456789abcdef0123456789',
    APP_HOST: options.serveConsole ? `http://127.0.0.1:${port}` : TEST_APP_HOST,
    API_HOST: `http://127.0.0.1:${port}`,
    PORT: String(port),
    // bcrypt at cost 12 takes a quarter of a second per hash on this machine; tests need no strength.
    PASSWORD_HASH_COST: '4',
    // Work starts when its commit wakes a worker, never by the poll: a wake-up missing fails the test
    // instead of costing 2 s. Tests of work that comes due at a time poll (POLL_FOR_DUE_WORK).
    JOB_POLL_SECONDS: '600',
    ...env,
  });
  const clock = new TestClock();
  const shared = options.shareDatabaseWith?.container.database;
  let container: Container;
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    const database = shared ? { ...shared, close: async () => {} } : await createTestDatabase();
    container = await createContainer(config, { clock, database, logger: options.logger });
    await container.start({ workers: options.workers ?? true });
    app = await buildApp(container);
    options.routes?.(app, container);
  } finally {
    await release();
  }
  await app.listen({ host: '127.0.0.1', port });
  const baseUrl = `http://127.0.0.1:${port}`;

  return {
    container,
    clock,
    baseUrl,
    request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.body !== undefined) headers['content-type'] ??= 'application/json';
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      if (options.cookie) headers.cookie = `session=${options.cookie}`;
      return fetch(`${baseUrl}${path}`, {
        method,
        headers,
        body:
          options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
        redirect: options.redirect ?? 'manual',
      });
    },
    async close() {
      await app.close();
      await container.close();
    },
  };
}
