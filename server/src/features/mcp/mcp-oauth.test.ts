import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { calledTools, toolResults } from '../../../test/helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let authorizationServer: OAuth2Server;
let orders: TestMcpServer;
const tokenRequests: Array<{ grantType: string; client: string | undefined; resource: string | undefined }> = [];
const CLIENT = { clientId: 'agent-platform', clientSecret: 'a-client-secret-0042' };

beforeAll(async () => {
  authorizationServer = new OAuth2Server();
  await authorizationServer.issuer.keys.generate('RS256');
  await authorizationServer.start(0, '127.0.0.1');
  // Each token its own (two signed in one second would otherwise be the same string).
  authorizationServer.service.on('beforeTokenSigning', (token) => {
    token.payload.jti = crypto.randomUUID();
  });
  // Confidential clients authenticate at the token endpoint with client_secret_basic.
  authorizationServer.service.on('beforeWellKnownOpenIdConfiguration', (response) => {
    (response.body as Record<string, unknown>).token_endpoint_auth_methods_supported = ['client_secret_basic'];
  });
  authorizationServer.service.on('beforeResponse', (response, req) => {
    const basic = req.headers.authorization?.startsWith('Basic ')
      ? Buffer.from(req.headers.authorization.slice(6), 'base64').toString('utf8')
      : undefined;
    const body = (req as unknown as { body?: Record<string, string> }).body ?? {};
    tokenRequests.push({ grantType: body.grant_type ?? '', client: basic, resource: body.resource });
    if (basic !== `${CLIENT.clientId}:${CLIENT.clientSecret}`) {
      response.statusCode = 401;
      response.body = { error: 'invalid_client', error_description: 'The client credentials are wrong' };
    }
  });
  orders = await startTestMcpServer({ authorizationServer: authorizationServer.issuer.url! });
});
afterAll(async () => {
  await orders?.close();
  await authorizationServer?.stop();
});
useAppWithModel({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, (started) => {
  ({ app, model } = started);
});

describe('MCP servers behind OAuth 2.1 client credentials', () => {
  it('gets a token from the authorization server the server names, caches it, and gets a new one on a 401', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { orders__lookup_order: 'allow' } });
    const { org, token } = setup.tenant;
    const call = (method: string, path: string, body?: unknown) =>
      app.request(method, `/orgs/${org.slug}/mcp-servers${path}`, { token, body });

    const wrong = await call('POST', '', {
      name: 'orders',
      url: orders.url,
      auth: { type: 'client_credentials', ...CLIENT, clientSecret: 'wrong' },
    });
    expect(wrong.status).toBe(422);
    expect(await wrong.json()).toMatchObject({
      code: 'mcp_unauthorized',
      error: expect.stringMatching(/refused the credentials/),
    });

    // Pinned to another authorization server: the secret is never sent to the one the MCP server names.
    const requestsBefore = tokenRequests.length;
    const elsewhere = await call('POST', '', {
      name: 'orders',
      url: orders.url,
      auth: { type: 'client_credentials', ...CLIENT, issuer: 'https://login.example.com' },
    });
    expect(elsewhere.status).toBe(422);
    expect((await elsewhere.json()).code).toBe('mcp_unauthorized');
    expect(tokenRequests.length).toBe(requestsBefore);

    const issuer = authorizationServer.issuer.url!;
    const created = await call('POST', '', {
      name: 'orders',
      url: orders.url,
      auth: { type: 'client_credentials', ...CLIENT, scope: 'orders:read', issuer },
    });
    expect(created.status).toBe(201);
    const server = await created.json();
    expect(server.auth).toEqual({
      type: 'client_credentials',
      clientId: 'agent-platform',
      scope: 'orders:read',
      issuer,
      clientSecretHint: '...0042',
    });
    expect(JSON.stringify(server)).not.toContain(CLIENT.clientSecret);
    expect(server.tools.map((tool: { offeredAs: string }) => tool.offeredAs)).toContain('orders__lookup_order');
    expect(tokenRequests.at(-1)).toMatchObject({
      grantType: 'client_credentials',
      client: `${CLIENT.clientId}:${CLIENT.clientSecret}`,
    });

    await app.request('PATCH', `/orgs/${org.slug}/agents/${setup.agentId}`, { token, body: { tools: ['orders__lookup_order'] } });
    model.script((request) =>
      calledTools(request)
        ? { text: `Got ${JSON.stringify(toolResults(request).at(-1)!.content)}` }
        : { toolCalls: [{ name: 'orders__lookup_order', arguments: { orderId: 'O-1' } }] },
    );
    const run = async () => {
      const row = await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed']);
      expect(row.execution.toolCalls[0].status, JSON.stringify(row.execution.toolCalls[0].output)).toBe('completed');
      return row;
    };
    await run();
    const afterFirst = tokenRequests.length;
    await run();
    expect(tokenRequests.length).toBe(afterFirst); // the token is kept between calls

    orders.revokeTokens();
    const third = await run();
    expect(third.execution.result.text).toContain('O-1');
    expect(tokenRequests.length).toBe(afterFirst + 1); // refreshed once, on the 401
  });
});
