import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let orders: TestMcpServer;
beforeAll(async () => {
  orders = await startTestMcpServer();
  app = await startTestApp({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { workers: false });
});
afterAll(async () => {
  await app?.close();
  await orders?.close();
});

describe("an MCP server's name, the prefix of its tools", () => {
  it('is not changed, nor the server deleted, while an agent or a rule names its tools; then both are', async () => {
    const made = await setupWebhook(app);
    const { org, token } = made.tenant;
    const call = (method: string, path: string, body?: unknown) =>
      app.request(method, `/orgs/${org.slug}${path}`, { token, body });
    const server = await (await call('POST', '/mcp-servers', { name: 'orders', url: orders.url })).json();
    expect((await call('PATCH', `/agents/${made.agentId}`, { tools: ['orders__lookup_order', 'generateDocument'] })).status).toBe(
      200,
    );
    const { id: ruleId } = await (
      await call('POST', '/action-rules', {
        name: 'Refunds',
        agentId: made.agentId,
        approvalRules: {},
        argumentRules: [{ tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 100, mode: 'ask' }],
      })
    ).json();

    const refusedBoth = async (naming: RegExp) => {
      for (const [method, path, body, doing] of [
        ['PATCH', `/mcp-servers/${server.id}`, { name: 'shop' }, 'renamed'],
        ['DELETE', `/mcp-servers/${server.id}`, undefined, 'deleted'],
      ] as const) {
        const response = await call(method, path, body);
        expect(response.status, method).toBe(409);
        const answer = await response.json();
        expect(answer.code).toBe('conflict');
        expect(answer.error).toMatch(new RegExp(`cannot be ${doing} while these name its tools`));
        expect(answer.error).toMatch(naming);
      }
      expect((await (await call('GET', `/mcp-servers/${server.id}`)).json()).name).toBe('orders');
    };
    await refusedBoth(/agent "Helper".*rule "Refunds"/);
    // Changing its settings but not its name is fine.
    expect((await call('PATCH', `/mcp-servers/${server.id}`, { headers: { 'X-Key': 'k' } })).status).toBe(200);

    expect((await call('PATCH', `/agents/${made.agentId}`, { tools: ['generateDocument'] })).status).toBe(200);
    await refusedBoth(/rule "Refunds"/);
    expect(
      (await call('PATCH', `/action-rules/${ruleId}`, { argumentRules: [], approvalRules: { orders__refund_order: 'ask' } }))
        .status,
    ).toBe(200);
    await refusedBoth(/rule "Refunds"/);
    expect((await call('PATCH', `/action-rules/${ruleId}`, { approvalRules: {} })).status).toBe(200);

    const renamed = await call('PATCH', `/mcp-servers/${server.id}`, { name: 'shop' });
    expect(renamed.status).toBe(200);
    expect((await renamed.json()).tools[0].offeredAs).toMatch(/^shop__/);
    expect((await call('DELETE', `/mcp-servers/${server.id}`)).status).toBe(204);
  });

  it("another org's agents and rules do not hold this org's server", async () => {
    const mine = await setupWebhook(app);
    const theirs = await setupWebhook(app);
    for (const made of [mine, theirs]) {
      const { org, token } = made.tenant;
      await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: orders.url } });
    }
    await app.request('PATCH', `/orgs/${theirs.tenant.org.slug}/agents/${theirs.agentId}`, {
      token: theirs.tenant.token,
      body: { tools: ['orders__lookup_order'] },
    });
    const { mcpServers } = await (
      await app.request('GET', `/orgs/${mine.tenant.org.slug}/mcp-servers`, { token: mine.tenant.token })
    ).json();
    const deleted = await app.request('DELETE', `/orgs/${mine.tenant.org.slug}/mcp-servers/${mcpServers[0].id}`, {
      token: mine.tenant.token,
    });
    expect(deleted.status).toBe(204);
  });
});
