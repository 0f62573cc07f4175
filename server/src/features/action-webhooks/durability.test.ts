import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, setCookies } from '../../../test/helpers/http.ts';
import { createTestDatabaseUrl } from '../../../test/helpers/test-database.ts';
import { signingHeaders } from './verification.ts';

const CLI = join(import.meta.dirname, '../../cli.ts');
let env: Record<string, string>;
let dataDir: string;
let dropDatabase = async () => {};

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ap-kill-'));
  env = { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', DATA_DIR: dataDir, LOG_LEVEL: 'warn', NODE_ENV: 'development', WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '1000000' };
  if (process.env.TEST_DB === 'postgres') {
    const database = await createTestDatabaseUrl();
    env.DATABASE_URL = database.url;
    dropDatabase = database.drop;
  }
});
afterAll(async () => {
  await dropDatabase();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startServer(port: number): Promise<ChildProcess> {
  const server = spawn(process.execPath, [CLI, 'serve'], { env: { ...env, PORT: String(port), API_HOST: `http://127.0.0.1:${port}` }, stdio: 'ignore' });
  const deadline = Date.now() + 45_000;
  while (!(await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false))) {
    if (server.exitCode !== null || Date.now() > deadline) throw new Error('server did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return server;
}

describe('durability of acknowledged events', () => {
  it('keeps every action answered 200 across a SIGKILL, with no duplicates', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServer(port);
    try {
      const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
      expect(cli('orgs', 'create', '--slug', 'acme', '--name', 'Acme').status).toBe(0);
      expect(cli('users', 'create', '--email', 'ops@acme.example', '--password', 'a long password', '--role', 'Admin', '--org', 'acme').status).toBe(0);
      const login = await fetch(`${base}/auth/login/credentials`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ops@acme.example', password: 'a long password' }) });
      const token = setCookies(login).get('session')!.value;
      const api = async (method: string, path: string, body?: unknown): Promise<any> =>
        (await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })).json();
      const me = await api('GET', '/auth/me');
      const rule = await api('POST', '/orgs/acme/action-rules', { name: 'r' });
      const created = await api('POST', '/orgs/acme/webhooks', { name: 'w', actionRuleId: rule.id, runAsUserId: me.id, rateLimitPerMinute: 1000 });
      const path = new URL(created.url).pathname;

      // Signed posts from 20 senders until the server is killed.
      const answered = new Map<string, string>();
      const statuses = new Map<number | string, number>();
      let sequence = 0;
      let killed = false;
      const sender = async () => {
        while (!killed) {
          const externalId = `evt-${sequence++}`;
          const body = JSON.stringify({ eventType: 'order.created', externalId });
          try {
            const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...signingHeaders('wh', created.secret, body) }, body });
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
            if (response.status === 200) answered.set(externalId, ((await response.json()) as { actionId: string }).actionId);
          } catch {
            // The server died mid-request: not acknowledged, so nothing is owed.
          }
        }
      };
      const senders = Array.from({ length: 20 }, sender);
      const deadline = Date.now() + 15_000;
      while (answered.size < 200) {
        if (Date.now() > deadline) throw new Error(`only ${answered.size} answered: ${JSON.stringify([...statuses])}; webhook ${JSON.stringify(created)}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGKILL');
      killed = true;
      await Promise.all(senders);
      await exited;

      server = await startServer(port);
      const login2 = await fetch(`${base}/auth/login/credentials`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ops@acme.example', password: 'a long password' }) });
      const token2 = setCookies(login2).get('session')!.value;
      const rows: Array<{ actionId: string; externalId: string }> = [];
      let cursor: string | null = null;
      do {
        const page = (await (await fetch(`${base}/orgs/acme/ledger?kind=action&limit=200${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${token2}` } })).json()) as { rows: Array<{ actionId: string; externalId: string }>; nextCursor: string | null };
        rows.push(...page.rows);
        cursor = page.nextCursor;
      } while (cursor);
      const stored = new Map(rows.map((row) => [row.externalId, row.actionId]));
      expect(stored.size).toBe(rows.length); // no externalId twice
      for (const [externalId, actionId] of answered) expect(stored.get(externalId), externalId).toBe(actionId);
      expect(answered.size).toBeGreaterThanOrEqual(200);
    } finally {
      if (server.exitCode === null) server.kill('SIGKILL');
    }
  }, 120_000);
});
