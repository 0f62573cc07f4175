import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { freePort, setCookies } from '../test/helpers/http.ts';
import { eventually } from '../test/helpers/eventually.ts';
import { endsWithTest, killServerProcess, waitForReady } from '../test/helpers/server-process.ts';
import { createTestDatabaseUrl } from '../test/helpers/test-database.ts';

const CLI = join(import.meta.dirname, 'cli.ts');
let env: Record<string, string>;
let cleanup: () => Promise<void>;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ap-cli-'));
  const base = {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? '/tmp',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    NODE_ENV: 'development',
  };
  if (process.env.TEST_DB === 'postgres') {
    const database = await createTestDatabaseUrl();
    env = { ...base, DATABASE_URL: database.url };
    cleanup = database.drop;
  } else {
    env = base;
    cleanup = async () => {};
  }
});
afterAll(async () => {
  await cleanup?.();
  rmSync(dataDir, { recursive: true, force: true });
});

// Each CLI run is a new Node process (2 to 4 s on a 2-core machine while the rest of the suite runs
// in parallel), and these tests run several: they get more time than the suite's default 30 s.
const CLI_TEST_TIMEOUT_MS = 120_000;
const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', timeout: 60_000 });

describe('agent-platform CLI', () => {
  it(
    'exits non-zero with a message on bad arguments',
    () => {
      const cases: Array<[string[], RegExp]> = [
        [['users', 'create', '--email', 'a@example.com'], /Missing --password, --role/],
        [
          ['users', 'create', '--email', 'a@example.com', '--password', 'long enough pw', '--role', 'Root'],
          /--role must be Admin or Guest/,
        ],
        [['users', 'create', '--bogus'], /Unknown option '--bogus'/],
        [['frobnicate'], /Unknown command: frobnicate/],
        [['orgs', 'create', '--slug', 'Bad Slug!', '--name', 'x'], /slug must be/],
        [['users', 'set-password', '--email', 'nobody@example.com', '--password', 'long enough pw'], /No user with email/],
      ];
      for (const [args, message] of cases) {
        const result = cli(...args);
        expect(result.status, args.join(' ')).not.toBe(0);
        expect(result.stderr, args.join(' ')).toMatch(message);
      }
      expect(cli().status).toBe(1);
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'says on stderr that it generated a development key; a mistyped command, bad arguments or the OpenAPI document write nothing; a start after orgs create names that org',
    async () => {
      const fresh = mkdtempSync(join(tmpdir(), 'ap-cli-key-'));
      // Its own database on PostgreSQL: the other tests' server must find no org and no user.
      const database = env.DATABASE_URL ? await createTestDatabaseUrl() : undefined;
      const ownEnv = { ...env, DATA_DIR: fresh, ...(database ? { DATABASE_URL: database.url } : {}) };
      try {
        const run = (...args: string[]) =>
          spawnSync(process.execPath, [CLI, ...args], { env: ownEnv, encoding: 'utf8', timeout: 60_000 });
        const keyFile = join(fresh, 'master.key');
        expect(run('frobnicate').status).toBe(1);
        expect(run('orgs', 'create', '--slug', 'beta').stderr).toMatch(/Missing --name/);
        // The OpenAPI document is printed alone on stdout, and needs no key.
        const openapi = run('openapi');
        expect(openapi.status, openapi.stderr).toBe(0);
        expect(JSON.parse(openapi.stdout)).toMatchObject({ openapi: expect.stringMatching(/^3\./), paths: expect.any(Object) });
        // A reader that stops early (`| head`) ends it quietly: the document (700 kB) outlasts the pipe's buffer.
        const cut = spawn(process.execPath, [CLI, 'openapi'], { env: ownEnv, stdio: ['ignore', 'pipe', 'pipe'] });
        let cutStderr = '';
        cut.stderr!.on('data', (chunk) => (cutStderr += chunk));
        cut.stdout!.once('data', () => cut.stdout!.destroy());
        expect(await new Promise((resolve) => cut.once('exit', resolve))).toBe(0);
        expect(cutStderr).toBe('');
        expect(existsSync(keyFile)).toBe(false);
        const created = run('orgs', 'create', '--slug', 'beta', '--name', 'Beta');
        expect(created.status, created.stderr).toBe(0);
        expect(created.stderr).toContain(`Generated a development ENCRYPTION_MASTER_KEY in ${keyFile}`);
        // The key is reused from then on, and nothing more is said of it.
        expect(run('migrate').stderr).toBe('');

        // The server's first-admin hint names the org that exists instead of telling to create one.
        const port = await freePort();
        const server = endsWithTest(
          spawn(process.execPath, [CLI, 'serve'], { env: { ...ownEnv, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] }),
        );
        let output = '';
        server.stdout!.on('data', (chunk) => (output += chunk));
        await eventually('the first-admin hint', () => (output.includes('No users yet.') ? true : undefined), 60_000);
        expect(output).toMatch(/No users yet\. Create the first admin of beta: .*npm run cli -- users create .* --org beta/);
        expect(output).not.toContain('orgs create');
        await killServerProcess(server);
      } finally {
        rmSync(fresh, { recursive: true, force: true });
        await database?.drop();
      }
    },
    CLI_TEST_TIMEOUT_MS,
  );

  it(
    'creates orgs and users while the server runs, and the created admin can log in; SIGTERM lets an in-flight request finish',
    async () => {
      const port = await freePort();
      const baseUrl = `http://127.0.0.1:${port}`;
      const server = endsWithTest(
        spawn(process.execPath, [CLI, 'serve'], {
          env: { ...env, PORT: String(port), API_HOST: baseUrl },
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      );
      let output = '';
      server.stdout!.on('data', (chunk) => (output += chunk));
      server.stderr!.on('data', (chunk) => (output += chunk));
      onTestFailed(() => console.error(`The server's output:\n${output}`));
      await waitForReady(baseUrl, server);
      // The hint follows the start-up line; a state to wait for, not a moment.
      await eventually('the first-admin hint', () => (output.includes('No users yet.') ? true : undefined), 10_000);
      // On PostgreSQL the CLI opens the database itself, so the hint names DATABASE_URL.
      expect(output).toMatch(
        env.DATABASE_URL
          ? /No users yet\. Create the first organization and its admin: DATABASE_URL=\S+ npm run cli -- orgs create --slug acme/
          : /No users yet\. Create the first organization and its admin: npm run cli -- orgs create --slug acme/,
      );
      expect(output).toContain('--role Admin --org acme');

      // On PGlite the command is carried out by the server through its socket (nothing said on stderr);
      // on PostgreSQL the CLI writes to the database the server reads.
      const org = cli('orgs', 'create', '--slug', 'acme', '--name', 'Acme Inc');
      expect(org.stdout, org.stderr).toMatch(/Created organization acme/);
      expect(org.stderr).toBe('');
      if (!env.DATABASE_URL) {
        // A second process on the same PGlite directory is refused with a reason, not a crash.
        const second = cli('serve');
        expect(second.status).toBe(1);
        expect(second.stderr).toMatch(/Another agent-platform process is serving from/);
      }
      const createAdmin = [
        'users',
        'create',
        '--email',
        'admin@acme.example',
        '--password',
        'a long password',
        '--role',
        'Admin',
      ];
      const created = cli(...createAdmin, '--org', 'acme', '--first-name', 'Ada');
      expect(created.status, created.stderr).toBe(0);
      expect(created.stdout).toMatch(/Created Admin admin@acme.example/);
      const duplicate = cli(...createAdmin);
      expect(duplicate.status).toBe(1);
      expect(duplicate.stderr).toMatch(/already exists/);
      expect(
        cli('users', 'create', '--email', 'g@acme.example', '--password', 'a long password', '--role', 'Guest', '--org', 'nope')
          .status,
      ).toBe(1);
      expect(cli('users', 'set-password', '--email', 'admin@acme.example', '--password', 'an even longer password').status).toBe(
        0,
      );

      const login = await fetch(`${baseUrl}/auth/login/credentials`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@acme.example', password: 'an even longer password' }),
      });
      expect(login.status).toBe(200);
      const token = setCookies(login).get('session')!.value;
      const members = await fetch(`${baseUrl}/orgs/acme/members`, { headers: { authorization: `Bearer ${token}` } });
      expect(((await members.json()) as { members: Array<{ email: string }> }).members[0]!.email).toBe('admin@acme.example');

      // A request whose body is still arriving when SIGTERM comes is answered before the process exits.
      const body = JSON.stringify({ email: 'admin@acme.example', password: 'an even longer password' });
      const inFlight = new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          `${baseUrl}/auth/login/credentials`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, 10));
        setTimeout(() => {
          server.kill('SIGTERM');
          setTimeout(() => req.end(body.slice(10)), 300);
        }, 300);
      });
      expect(await inFlight).toBe(200);
      const exitCode = await new Promise<number | null>((resolve) =>
        server.exitCode !== null ? resolve(server.exitCode) : server.once('exit', resolve),
      );
      expect(exitCode).toBe(0);
      expect(output).toContain('shutting down');
      expect(output).not.toContain('an even longer password');
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
