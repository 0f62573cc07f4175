import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { calledTools, type ChatRequest, toolResults } from '../../../test/helpers/fake-model.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import { type ScriptedMcpServer, scriptedTool, startScriptedMcpServer } from '../../../test/helpers/scripted-mcp-server.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';
import { createTenant } from '../../../test/helpers/factories.ts';

let app: TestApp;
let model: FakeModel;
useAppWithModel({ MCP_ALLOW_PRIVATE_NETWORKS: 'true', MCP_MAX_RESULT_BYTES: '2000' }, (started) => {
  ({ app, model } = started);
});

const servers: ScriptedMcpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
async function scripted(options: Parameters<typeof startScriptedMcpServer>[0]) {
  const server = await startScriptedMcpServer(options);
  servers.push(server);
  return server;
}

/** The model calls `name` with `args` once, then answers with what it got back. */
const callThenReport = (name: string, args: unknown) => (request: ChatRequest) =>
  calledTools(request)
    ? { text: `Got ${JSON.stringify(toolResults(request).at(-1)!.content)}` }
    : { toolCalls: [{ name, arguments: args }] };

/** A refund tool (neither read-only nor idempotent) whose answer is the raw JSON the test gives. */
async function refundRun(resultJson: string) {
  const server = await scripted({ tools: [scriptedTool('refund', { destructiveHint: true })], answer: () => resultJson });
  const made = await setupWebhook(app, {}, { approvalRules: { erp__refund: 'allow' } });
  const { org, token } = made.tenant;
  expect(
    (await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'erp', url: server.url } })).status,
  ).toBe(201);
  expect(
    (await app.request('PATCH', `/orgs/${org.slug}/agents/${made.agentId}`, { token, body: { tools: ['erp__refund'] } })).status,
  ).toBe(200);
  model.script(callThenReport('erp__refund', { orderId: 'A-1' }));
  const row = await waitForAction(app, auth(made), await runEvent(app, made), ['completed', 'failed']);
  return { row, server };
}

describe('an MCP server whose answers the database cannot hold as they are', () => {
  it('a NUL or a lone surrogate in the answer: stored with the characters replaced, and said so; the action goes on', async () => {
    for (const text of ['Refunded\\u0000 30', 'Refunded \\ud800 30', 'Refunded \\udc00\\u0000 30']) {
      const { row, server } = await refundRun(`{"content":[{"type":"text","text":"${text}"}]}`);
      expect(server.calls).toHaveLength(1);
      expect(row.status, text).toBe('completed');
      const [call] = row.execution.toolCalls;
      expect(call.status).toBe('completed');
      expect(call.output.value).toMatchObject({ value: expect.stringMatching(/^Refunded ?\uFFFD/) });
      expect(call.output.value.note).toMatch(/could not be stored and w(as|ere) replaced by U\+FFFD/);
      // The model was told what the server answered, and that it was changed.
      expect(row.execution.result.text).toMatch(/Refunded/);
    }
  });

  it('an answer over the size read, and one nested too deep to read: the call failed, and may have been done', async () => {
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const cases = [
      [`{"content":[{"type":"text","text":"${'x'.repeat(17 * 1024 * 1024)}"}]}`, /answered with more than \d+ bytes/],
      [`{"content":[{"type":"text","text":"ok"}],"structuredContent":${deep}}`, /answer could not be read/],
    ] as const;
    for (const [answer, words] of cases) {
      const { row, server } = await refundRun(answer);
      expect(server.calls).toHaveLength(1);
      expect(row.status).toBe('completed');
      const [call] = row.execution.toolCalls;
      expect(call.status).toBe('failed');
      const said = JSON.stringify(call.output);
      expect(said).toMatch(words);
      expect(said).toMatch(/it may or may not have done it/);
      expect(said).not.toMatch(/could not be reached|Maximum call stack/);
    }
  });
});

describe('an answer that does not have the shape MCP gives it', () => {
  it("a JSON API that is not an MCP server: refused with what is wrong, in a line, not the schema check's dump", async () => {
    // What pointing at the wrong path of a JSON API gives: 200, JSON, no JSON-RPC.
    const api = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"cmpl-1","object":"chat.completion"}'),
    );
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    try {
      const { org, token } = await createTenant(app);
      const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/v1`;
      const response = await app.request('POST', `/orgs/${org.slug}/mcp-servers/test`, { token, body: { name: 'api', url } });
      expect(response.status).toBe(422);
      const { code, error } = await response.json();
      expect(code).toBe('mcp_protocol');
      expect(error).toMatch(
        /^The server at .* did not answer as an MCP server: the answer does not have MCP's shape \(jsonrpc: /,
      );
      expect(error).not.toMatch(/\n|"code"|invalid_union/);
      expect(error.length).toBeLessThan(400);
    } finally {
      await new Promise<void>((resolve) => api.close(() => resolve()));
    }
  });

  it('a tool result of the wrong shape: the call failed, said in a line, and may have been done', async () => {
    const { row, server } = await refundRun('{"content":"refunded"}');
    expect(server.calls).toHaveLength(1);
    const [call] = row.execution.toolCalls;
    expect(call.status).toBe('failed');
    const said = JSON.stringify(call.output.value);
    expect(said).toMatch(/the answer does not have MCP's shape \(content: /);
    expect(said).not.toMatch(/\\n|invalid_union|"code"/);
  });
});

describe('a run that fails after a call was sent', () => {
  it('records the call as failed and possibly done, never as not run', async () => {
    // This file's own database refuses to store the answer (any fault after the request left would do).
    const { db } = app.container;
    await sql`alter table tool_calls add constraint test_refuses_boom check (output is null or output::text not like '%BOOM%')`.execute(
      db,
    );
    try {
      const { row, server } = await refundRun('{"content":[{"type":"text","text":"BOOM: refunded"}]}');
      expect(server.calls).toHaveLength(1);
      expect(row.status).toBe('failed');
      expect(row.execution.error).toMatch(/^Internal error while running the action: .*test_refuses_boom/);
      const [call] = row.execution.toolCalls;
      expect(call).toMatchObject({ status: 'failed', startedAt: expect.any(String), completedAt: expect.any(String) });
      expect(call.output.value).toMatch(
        /^The run failed after this call was sent, before its result was stored \(.*\); it may or may not have been done$/,
      );
    } finally {
      await sql`alter table tool_calls drop constraint test_refuses_boom`.execute(db);
    }
  });
});

describe('an MCP server whose listing is partly unusable', () => {
  it('a tool named with a NUL, a schema that is no object, a schema too large: each listed with its problem, the server kept', async () => {
    const huge = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`field${i}`, { type: 'string' }])),
    };
    const server = await scripted({
      tools: [
        scriptedTool('lookup'),
        { name: 'bad\u0000name', inputSchema: { type: 'object' } },
        { name: 'listy', inputSchema: { type: 'array' } },
        { name: 'stringy', inputSchema: 'not a schema' },
        { name: 'huge', inputSchema: huge },
        { name: 42, inputSchema: { type: 'object' } },
      ],
    });
    const made = await setupWebhook(app);
    const { org, token } = made.tenant;
    const created = await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'erp', url: server.url } });
    expect(created.status).toBe(201);
    const { tools } = await created.json();
    const byName = (name: string) => tools.find((tool: { name: string }) => tool.name === name);
    expect(byName('lookup')).toMatchObject({ offeredAs: 'erp__lookup', problem: null });
    expect(byName('bad\uFFFDname')).toMatchObject({ offeredAs: null, problem: expect.stringMatching(/not a tool name/) });
    expect(byName('listy')).toMatchObject({ offeredAs: null, problem: 'its input schema is not an object schema' });
    expect(byName('stringy')).toMatchObject({ offeredAs: null, problem: 'its input schema is not an object schema' });
    expect(byName('huge')).toMatchObject({ offeredAs: null, problem: expect.stringMatching(/larger than/) });
    expect(byName('huge').inputSchema).toEqual({});
    expect(byName('42')).toMatchObject({ offeredAs: null, problem: 'its name is not a string' });
    const offered = await (await app.request('GET', `/orgs/${org.slug}/tools`, { token })).json();
    expect(offered.tools.filter((tool: { server: unknown }) => tool.server).map((tool: { name: string }) => tool.name)).toEqual([
      'erp__lookup',
    ]);
  });
});

describe('a server deleted while it is refreshed', () => {
  it('the refresh answers 404 and the process goes on', async () => {
    const server = await scripted({ tools: [scriptedTool('lookup')] });
    const made = await setupWebhook(app);
    const { org, token } = made.tenant;
    const { id } = await (
      await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'erp', url: server.url } })
    ).json();
    const release = server.holdListing();
    const refreshing = app.request('POST', `/orgs/${org.slug}/mcp-servers/${id}/refresh`, { token });
    await expect.poll(() => server.listings).toBeGreaterThan(1);
    expect((await app.request('DELETE', `/orgs/${org.slug}/mcp-servers/${id}`, { token })).status).toBe(204);
    release();
    const refreshed = await refreshing;
    expect(refreshed.status).toBe(404);
    expect((await refreshed.json()).code).toBe('not_found');
    expect((await app.request('GET', '/healthz')).status).toBe(200);
  });
});
