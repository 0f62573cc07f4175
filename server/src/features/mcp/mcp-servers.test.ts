import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../../test/helpers/factories.ts';
import { freePort } from '../../../test/helpers/http.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { scriptedTool, startScriptedMcpServer } from '../../../test/helpers/scripted-mcp-server.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let strictApp: TestApp;
let orders: TestMcpServer;
let stateless: TestMcpServer;
let guarded: TestMcpServer;
let notMcp: { url: string; close(): Promise<void> };
beforeAll(async () => {
  [orders, stateless, guarded] = await Promise.all([
    startTestMcpServer(),
    startTestMcpServer({ sessions: false }),
    startTestMcpServer({ bearerToken: 'token-of-acme' }),
  ]);
  const plain = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not here</h1>'));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  notMcp = {
    url: `http://127.0.0.1:${(plain.address() as AddressInfo).port}/mcp`,
    close: () => new Promise((resolve) => plain.close(() => resolve())),
  };
  app = await startTestApp({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { workers: false });
  // As deployed by default: only public addresses.
  strictApp = await startTestApp({}, { workers: false, shareDatabaseWith: app });
});
afterAll(async () => {
  await strictApp?.close();
  await app?.close();
  await Promise.all([orders?.close(), stateless?.close(), guarded?.close(), notMcp?.close()]);
});

async function tenant() {
  const t = await createTenant(app);
  const call = (method: string, path: string, body?: unknown, as = t.token) =>
    app.request(method, `/orgs/${t.org.slug}/mcp-servers${path}`, { token: as, body });
  return { ...t, call };
}

describe('MCP servers', () => {
  it('connects a server, lists its tools with their annotations and offers them to agents as <server>__<tool>', async () => {
    const { org, token, call } = await tenant();
    const created = await call('POST', '', { name: 'orders', url: orders.url, headers: { 'X-Api-Key': 'secret-key-12345' } });
    expect(created.status).toBe(201);
    const server = await created.json();
    expect(server).toMatchObject({
      name: 'orders',
      url: orders.url,
      headerHints: { 'X-Api-Key': '...2345' },
      auth: null,
      serverInfo: { name: 'orders', version: '1.2.3' },
    });
    expect(JSON.stringify(server)).not.toContain('secret-key-12345');
    const refund = server.tools.find((tool: { name: string }) => tool.name === 'refund_order');
    expect(refund).toMatchObject({
      offeredAs: 'orders__refund_order',
      description: 'Refund an order, in full or in part',
      annotations: { destructiveHint: true, idempotentHint: false },
      problem: null,
      inputSchema: { type: 'object', required: ['orderId', 'amount'] },
    });
    expect(server.toolsListedAt).toEqual(expect.any(String));

    // The org's tools: built-in ones beside the server's, with their server.
    const { tools } = await (await app.request('GET', `/orgs/${org.slug}/tools`, { token })).json();
    expect(tools.find((tool: { name: string }) => tool.name === 'generateDocument').server).toBeNull();
    expect(tools.find((tool: { name: string }) => tool.name === 'orders__lookup_order')).toMatchObject({
      server: { id: server.id, name: 'orders', tool: 'lookup_order', annotations: { readOnlyHint: true } },
    });
    // An agent names them like built-in tools; an unknown one is refused.
    const agent = await app.request('POST', `/orgs/${org.slug}/agents`, {
      token,
      body: { name: 'Clerk', tools: ['orders__refund_order', 'generateDocument'] },
    });
    expect(agent.status).toBe(201);
    const unknown = await app.request('POST', `/orgs/${org.slug}/agents`, {
      token,
      body: { name: 'C', tools: ['orders__nope'] },
    });
    expect(unknown.status).toBe(400);

    expect((await (await call('GET', '')).json()).mcpServers.map((s: { name: string }) => s.name)).toEqual(['orders']);
    expect((await (await call('GET', `/${server.id}`)).json()).tools).toHaveLength(server.tools.length);

    // A user may always deny an MCP tool of their org (and not one of another org's).
    const preference = await app.request('PUT', '/api/me/tool-preferences/orders__refund_order', {
      token,
      body: { preference: 'always_deny' },
    });
    expect(preference.status).toBe(200);
    const outsider = await createTenant(app);
    const theirs = await app.request('PUT', '/api/me/tool-preferences/orders__refund_order', {
      token: outsider.token,
      body: { preference: 'always_deny' },
    });
    expect(theirs.status).toBe(404);
  });

  it('speaks to stateless servers, with credentials as headers; refresh lists again and a removed tool is no longer offered', async () => {
    const { call } = await tenant();
    const server = await (await call('POST', '', { name: 'crm', url: stateless.url })).json();
    expect(server.tools.map((tool: { offeredAs: string }) => tool.offeredAs)).toContain('crm__set_status');

    const withToken = await call('POST', '', {
      name: 'guarded',
      url: guarded.url,
      headers: { Authorization: 'Bearer token-of-acme' },
    });
    expect(withToken.status).toBe(201);
    expect((await withToken.json()).headerHints).toEqual({ Authorization: '...acme' });

    stateless.removeTool('set_status');
    const refreshed = await (await call('POST', `/${server.id}/refresh`)).json();
    expect(refreshed.tools.map((tool: { name: string }) => tool.name)).not.toContain('set_status');
    // Listed again: the stamp moved (by the database's clock, past the listing at creation).
    expect(new Date(refreshed.toolsListedAt).getTime()).toBeGreaterThan(new Date(server.toolsListedAt).getTime());
  });

  it('refuses a server that cannot be reached, refuses the credentials or speaks no MCP, with its words, saving nothing', async () => {
    const { call } = await tenant();
    const closedPort = `http://127.0.0.1:${await freePort()}/mcp`;
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ name: 'down', url: closedPort }, 'mcp_unreachable', /could not be reached.*ECONNREFUSED/s],
      [{ name: 'guarded', url: guarded.url }, 'mcp_unauthorized', /refused the credentials/],
      [
        { name: 'guarded', url: guarded.url, headers: { Authorization: 'Bearer wrong' } },
        'mcp_unauthorized',
        /refused the credentials/,
      ],
      [{ name: 'html', url: notMcp.url }, 'mcp_protocol', /did not answer as an MCP server/],
    ];
    for (const [body, code, message] of cases) {
      for (const path of ['', '/test']) {
        const response = await call('POST', path, body);
        const answer = await response.json();
        expect(response.status, `${code} ${path}`).toBe(422);
        expect(answer.code).toBe(code);
        expect(answer.error).toMatch(message);
      }
    }
    expect((await (await call('GET', '')).json()).mcpServers).toEqual([]);

    // A change that breaks the connection is refused too, and the saved server stays as it was.
    const saved = await (await call('POST', '', { name: 'orders', url: orders.url })).json();
    const broken = await call('PATCH', `/${saved.id}`, { url: closedPort });
    expect(broken.status).toBe(422);
    expect((await (await call('GET', `/${saved.id}`)).json()).url).toBe(orders.url);
    const renamed = await (await call('PATCH', `/${saved.id}`, { name: 'shop' })).json();
    expect(renamed.tools[0].offeredAs).toMatch(/^shop__/);
  });

  it('the connection test saves nothing and says what agents would be offered', async () => {
    const { call } = await tenant();
    const test = await call('POST', '/test', { name: 'orders', url: orders.url });
    expect(test.status).toBe(200);
    const result = await test.json();
    expect(result.serverInfo.name).toBe('orders');
    expect(result.tools.map((tool: { offeredAs: string }) => tool.offeredAs)).toContain('orders__refund_order');
    expect((await (await call('GET', '')).json()).mcpServers).toEqual([]);
  });

  it('refuses bad input with 4xx and { error, code }', async () => {
    const { call } = await tenant();
    await call('POST', '', { name: 'orders', url: orders.url });
    const bad: Array<[Record<string, unknown>, number]> = [
      [{ name: 'Orders!', url: orders.url }, 400],
      [{ name: 'x'.repeat(33), url: orders.url }, 400],
      [{ name: 'ok', url: 'ftp://example.com/mcp' }, 400],
      [{ name: 'ok', url: 'not a url' }, 400],
      [{ name: 'ok', url: orders.url, headers: { 'Content-Type': 'text/plain' } }, 400],
      [{ name: 'ok', url: orders.url, headers: { 'X-A': 'line\r\nbreak' } }, 400],
      [{ name: 'ok', url: orders.url, headers: { 'bad name': 'x' } }, 400],
      [{ name: 'ok', url: orders.url, auth: { type: 'password', clientId: 'a' } }, 400],
      [{ name: 'ok\u0000', url: orders.url }, 400],
      [{ name: 'ok', url: `${orders.url}\ud800` }, 400],
      [{ name: 'ok', url: 'http://127.0.0.1:0/mcp' }, 400],
      [{ name: 'orders', url: orders.url }, 409],
    ];
    for (const [body, status] of bad) {
      const response = await call('POST', '', body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(await response.json()).toMatchObject({ error: expect.any(String), code: expect.any(String) });
    }
    let deep: unknown = 'x';
    for (let i = 0; i < 200; i++) deep = { a: deep };
    expect((await call('POST', '', { name: 'deep', url: orders.url, headers: deep })).status).toBe(400);
    expect((await call('PATCH', `/${crypto.randomUUID()}`, { name: 'other' })).status).toBe(404);
    expect((await call('PATCH', '/not-a-uuid', { name: 'other' })).status).toBe(400);
    expect((await call('DELETE', `/${crypto.randomUUID()}`)).status).toBe(404);
  });

  it('refuses private and loopback addresses unless MCP_ALLOW_PRIVATE_NETWORKS is set', async () => {
    const t = await createTenant(strictApp);
    const urls = [
      orders.url,
      'http://169.254.169.254/mcp',
      'http://10.0.0.8/mcp',
      'http://[::1]:8080/mcp',
      'http://localhost/mcp',
      'http://[fec0::1]/mcp',
    ];
    for (const url of urls) {
      const response = await strictApp.request('POST', `/orgs/${t.org.slug}/mcp-servers`, {
        token: t.token,
        body: { name: 'internal', url },
      });
      expect(response.status, url).toBe(400);
      expect((await response.json()).error).toMatch(/not a public address|resolves to/);
    }
  });

  it('with MCP_ALLOW_PRIVATE_NETWORKS, still refuses a cloud metadata service, when saved and again when connecting', async () => {
    const { call } = await tenant();
    for (const url of ['http://169.254.169.254/mcp', 'http://[fd00:ec2::254]/mcp', 'http://100.100.100.200/mcp']) {
      const response = await call('POST', '', { name: 'metadata', url });
      expect(response.status, url).toBe(400);
      expect(await response.json()).toMatchObject({
        code: 'validation_failed',
        error: expect.stringMatching(/^body\/url: \S+ is a cloud metadata address, never called$/),
      });
    }
    // Saved on a private address, then the URL is pointed at the metadata service: the connection refuses it.
    const saved = await (await call('POST', '', { name: 'internal', url: orders.url })).json();
    await app.container.db
      .updateTable('mcpServers')
      .set({ url: 'http://169.254.169.254/mcp' })
      .where('id', '=', saved.id)
      .execute();
    // The request named no URL: the saved server is unreachable, not the request's body invalid.
    const unreachable = {
      code: 'mcp_unreachable',
      error:
        'The MCP server at http://169.254.169.254/mcp could not be reached: 169.254.169.254 is a cloud metadata address, never called',
    };
    const refreshed = await call('POST', `/${saved.id}/refresh`);
    expect(refreshed.status).toBe(422);
    expect(await refreshed.json()).toEqual(unreachable);
    const renamed = await call('PATCH', `/${saved.id}`, { name: 'renamed' });
    expect(renamed.status).toBe(422);
    expect(await renamed.json()).toEqual(unreachable);
    // A URL the request gives is the body's.
    const pointed = await call('PATCH', `/${saved.id}`, { url: 'http://100.100.100.200/mcp' });
    expect(pointed.status).toBe(400);
    expect((await pointed.json()).error).toBe('body/url: 100.100.100.200 is a cloud metadata address, never called');
    expect((await (await call('GET', `/${saved.id}`)).json()).name).toBe('internal');
  });

  it('keeps each org to its own servers: another org can neither see, change nor use them', async () => {
    const mine = await tenant();
    const theirs = await tenant();
    const server = await (await mine.call('POST', '', { name: 'orders', url: orders.url })).json();
    for (const [method, path, body] of [
      ['GET', `/${server.id}`],
      ['PATCH', `/${server.id}`, { name: 'stolen' }],
      ['POST', `/${server.id}/refresh`],
      ['DELETE', `/${server.id}`],
    ] as const) {
      expect((await theirs.call(method, path, body)).status, `${method} ${path}`).toBe(404);
    }
    expect((await (await theirs.call('GET', '')).json()).mcpServers).toEqual([]);
    const { tools } = await (await app.request('GET', `/orgs/${theirs.org.slug}/tools`, { token: theirs.token })).json();
    expect(tools.some((tool: { name: string }) => tool.name.startsWith('orders__'))).toBe(false);
    const agent = await app.request('POST', `/orgs/${theirs.org.slug}/agents`, {
      token: theirs.token,
      body: { name: 'Thief', tools: ['orders__refund_order'] },
    });
    expect(agent.status).toBe(400);
    // Another org's admin cannot reach this org's servers through its slug either (nor learn that it exists).
    expect((await app.request('GET', `/orgs/${mine.org.slug}/mcp-servers`, { token: theirs.token })).status).toBe(404);

    expect((await mine.call('DELETE', `/${server.id}`)).status).toBe(204);
    const after = await (await app.request('GET', `/orgs/${mine.org.slug}/tools`, { token: mine.token })).json();
    expect(after.tools.some((tool: { name: string }) => tool.name.startsWith('orders__'))).toBe(false);
  });
});

describe('MCP servers of other makes', () => {
  it('lists every page of tools, lists a tool whose name does not fit with the reason, and follows no redirect', async () => {
    const paging = await startScriptedMcpServer({
      tools: ['a', 'b', 'c', 'd', 'orders.export'].map((name) => scriptedTool(name)),
      pageSize: 2,
      serverInfo: { name: 'paging', version: '0.1' },
    });
    try {
      const { call } = await tenant();
      const created = await call('POST', '', { name: 'erp', url: `${paging.base}/mcp` });
      expect(created.status).toBe(201);
      const server = await created.json();
      expect(server.tools.map((tool: { name: string }) => tool.name)).toEqual(['a', 'b', 'c', 'd', 'orders.export']);
      expect(server.tools.at(-1)).toMatchObject({
        offeredAs: null,
        problem: expect.stringMatching(/"erp__orders.export" is not a tool name/),
      });
      expect(server.serverInfo).toEqual({ name: 'paging', version: '0.1', protocolVersion: '2025-06-18' });

      const moved = await call('POST', '/test', { name: 'moved', url: `${paging.base}/moved` });
      expect(moved.status).toBe(422);
      expect(await moved.json()).toMatchObject({
        code: 'mcp_unreachable',
        error: expect.stringMatching(/redirect to \/mcp not followed/),
      });
    } finally {
      await paging.close();
    }
  });
});
