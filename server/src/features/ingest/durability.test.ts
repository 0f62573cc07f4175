import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/helpers/http.ts';
import {
  apiClient,
  killServerProcess,
  serverProcessEnvironment,
  startServerProcess,
} from '../../../test/helpers/server-process.ts';
import { signingHeaders } from './verification.ts';
import { eventually } from '../../../test/helpers/eventually.ts';

let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
beforeAll(async () => {
  environment = await serverProcessEnvironment({ WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: '1000000' });
});
afterAll(async () => environment?.cleanup());

describe('durability of acknowledged events', () => {
  it('keeps every action answered 200 across a SIGKILL, with no duplicates', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServerProcess(environment.env, port);
    const { cli } = environment;
    expect(cli('orgs', 'create', '--slug', 'acme', '--name', 'Acme').status).toBe(0);
    expect(
      cli('users', 'create', '--email', 'ops@acme.example', '--password', 'a long password', '--role', 'Admin', '--org', 'acme')
        .status,
    ).toBe(0);
    const api = await apiClient(base, { email: 'ops@acme.example', password: 'a long password' });
    const me = await api('GET', '/auth/me');
    const rule = await api('POST', '/orgs/acme/action-rules', { name: 'r' });
    const created = await api('POST', '/orgs/acme/webhooks', {
      name: 'w',
      actionRuleId: rule.id,
      runAsUserId: me.id,
      rateLimitPerMinute: 1000,
    });
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
          const response = await fetch(`${base}${path}`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              ...signingHeaders('wh', created.secret, body, { nowSeconds: Math.floor(Date.now() / 1000) }),
            },
            body,
          });
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status === 200) answered.set(externalId, ((await response.json()) as { actionId: string }).actionId);
        } catch {
          // The server died mid-request: not acknowledged, so nothing is owed.
        }
      }
    };
    const senders = Array.from({ length: 20 }, sender);
    await eventually(
      `200 answered posts (so far ${answered.size}: ${JSON.stringify([...statuses])})`,
      () => (answered.size >= 200 ? true : undefined),
      15_000,
    );
    const exited = killServerProcess(server);
    killed = true;
    await Promise.all(senders);
    await exited;

    server = await startServerProcess(environment.env, port);
    const api2 = await apiClient(base, { email: 'ops@acme.example', password: 'a long password' });
    const rows: Array<{ actionId: string; externalId: string }> = [];
    let cursor: string | null = null;
    do {
      const page = (await api2('GET', `/orgs/acme/ledger?kind=action&limit=200${cursor ? `&cursor=${cursor}` : ''}`)) as {
        rows: Array<{ actionId: string; externalId: string }>;
        nextCursor: string | null;
      };
      rows.push(...page.rows);
      cursor = page.nextCursor;
    } while (cursor);
    const stored = new Map(rows.map((row) => [row.externalId, row.actionId]));
    expect(stored.size).toBe(rows.length); // no externalId twice
    for (const [externalId, actionId] of answered) expect(stored.get(externalId), externalId).toBe(actionId);
    expect(answered.size).toBeGreaterThanOrEqual(200);
  }, 120_000);
});
