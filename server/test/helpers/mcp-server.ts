import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { McpServer } from '@modelcontextprotocol/server';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { z } from 'zod';

/** One side effect a tool of the test server did: what a real system would have done once per call. */
export interface SideEffect {
  tool: string;
  arguments: Record<string, unknown>;
  /** The `_meta` tool call id the platform sent. */
  toolCallId: string | undefined;
  /** The `_meta` action id the platform sent with it. */
  actionId: string | undefined;
}

export interface TestMcpServerOptions {
  /** Session-based (the 2025 revisions) or a fresh server per request (stateless). */
  sessions?: boolean;
  /** When set, every request must carry `Authorization: Bearer <token>` (else 401). */
  bearerToken?: string;
  /**
   * A protected resource of this authorization server (the MCP authorization spec): a request needs
   * one of its access tokens (a JWT it signed, not revoked by `revokeTokens`), else 401
   * naming the protected-resource metadata.
   */
  authorizationServer?: string;
}

/**
 * A real MCP server on loopback, built with the official TypeScript SDK: an order system whose tools
 * record their side effects. `refund_order` is destructive, `lookup_order` read-only, `set_status`
 * idempotent; `fail` answers isError, `slow` waits, `huge` returns a result of the size asked.
 */
export async function startTestMcpServer(options: TestMcpServerOptions = {}) {
  const sideEffects: SideEffect[] = [];
  const removed = new Set<string>();
  /** While set, calls of the recording tools wait for it, before their side effect or after it (a test holds a call in flight). */
  let hold: { released: Promise<void>; afterEffect: boolean } | undefined;
  const requests = { total: 0, initialize: 0 };
  /** How many of the next tools/call requests have their connection reset once read, before any tool runs. */
  let callsToReset = 0;

  const record = async (tool: string, args: Record<string, unknown>, meta: Record<string, unknown> | undefined) => {
    const held = hold;
    if (held && !held.afterEffect) await held.released;
    const toolCallId = meta?.['io.agent-platform/tool-call-id'];
    const actionId = meta?.['io.agent-platform/action-id'];
    sideEffects.push({
      tool,
      arguments: args,
      toolCallId: typeof toolCallId === 'string' ? toolCallId : undefined,
      actionId: typeof actionId === 'string' ? actionId : undefined,
    });
    if (held?.afterEffect) await held.released;
  };
  const metaOf = (ctx: unknown) => (ctx as { mcpReq?: { _meta?: Record<string, unknown> } }).mcpReq?._meta;

  function mcpServer() {
    const server = new McpServer({ name: 'orders', version: '1.2.3' });
    const tools = [
      server.registerTool(
        'refund_order',
        {
          description: 'Refund an order, in full or in part',
          inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
          annotations: { destructiveHint: true, idempotentHint: false },
        },
        async (args, ctx) => {
          await record('refund_order', args, metaOf(ctx));
          return { content: [{ type: 'text', text: `Refunded ${args.amount} on order ${args.orderId}` }] };
        },
      ),
      server.registerTool(
        'lookup_order',
        { description: 'Look an order up', inputSchema: z.object({ orderId: z.string() }), annotations: { readOnlyHint: true } },
        async (args, ctx) => {
          await record('lookup_order', args, metaOf(ctx));
          const order = { orderId: args.orderId, status: 'shipped', total: 120 };
          return { content: [{ type: 'text', text: JSON.stringify(order) }], structuredContent: order };
        },
      ),
      server.registerTool(
        'set_status',
        {
          description: 'Set the status of an order',
          inputSchema: z.object({ orderId: z.string(), status: z.string() }),
          annotations: { idempotentHint: true },
        },
        async (args, ctx) => {
          await record('set_status', args, metaOf(ctx));
          return { content: [{ type: 'text', text: 'ok' }] };
        },
      ),
      server.registerTool('fail', { description: 'Always fails', inputSchema: z.object({}) }, async () => ({
        content: [{ type: 'text', text: 'The order system is down for maintenance' }],
        isError: true,
      })),
      server.registerTool('slow', { description: 'Takes its time', inputSchema: z.object({ ms: z.number() }) }, async (args) => {
        await new Promise((resolve) => setTimeout(resolve, args.ms));
        return { content: [{ type: 'text', text: 'done' }] };
      }),
      server.registerTool(
        'huge',
        { description: 'Returns many bytes', inputSchema: z.object({ bytes: z.number() }) },
        async (args) => ({
          content: [{ type: 'text', text: 'x'.repeat(args.bytes) }],
        }),
      ),
    ];
    const names = ['refund_order', 'lookup_order', 'set_status', 'fail', 'slow', 'huge'];
    for (const [index, tool] of tools.entries()) if (removed.has(names[index]!)) tool.remove();
    return server;
  }

  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();
  let bearerToken = options.bearerToken;
  const issuer = options.authorizationServer;
  const jwks = issuer ? createRemoteJWKSet(new URL(`${issuer}/jwks`)) : undefined;
  const seenTokens = new Set<string>();
  const revokedTokens = new Set<string>();
  const tokenAccepted = async (header: string | undefined) => {
    if (!header?.startsWith('Bearer ')) return false;
    const token = header.slice(7);
    if (revokedTokens.has(token)) return false;
    try {
      await jwtVerify(token, jwks!, { issuer });
      seenTokens.add(token);
      return true;
    } catch {
      return false;
    }
  };
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    requests.total++;
    const metadataPath = '/.well-known/oauth-protected-resource/mcp';
    if (issuer && req.url === metadataPath) {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resource: url, authorization_servers: [issuer] }));
      return;
    }
    if (bearerToken && req.headers.authorization !== `Bearer ${bearerToken}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"invalid_token"}');
      return;
    }
    if (issuer && !(await tokenAccepted(req.headers.authorization))) {
      const metadata = `${new URL(url).origin}${metadataPath}`;
      res
        .writeHead(401, {
          'content-type': 'application/json',
          'www-authenticate': `Bearer error="invalid_token", resource_metadata="${metadata}"`,
        })
        .end('{"error":"invalid_token"}');
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport) {
      if (options.sessions === false) {
        transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      } else {
        if (typeof sessionId === 'string') {
          res
            .writeHead(404, { 'content-type': 'application/json' })
            .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
          return;
        }
        const created: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            requests.initialize++;
            sessions.set(id, created);
          },
        });
        transport = created;
      }
      await mcpServer().connect(transport);
    }
    if (callsToReset > 0 && req.method === 'POST') {
      // Read here to see what it is; a connection closed as the request arrives, as a server closes an idle kept-alive one.
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (body?.method === 'tools/call' && callsToReset > 0) {
        callsToReset--;
        req.socket.destroy();
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    sideEffects,
    requests,
    /** The token the server takes from now on (the org's stops working, as after a rotation). */
    rotateBearerToken(token: string) {
      bearerToken = token;
    },
    /** Every access token issued until now is refused from now on (their holders must get new ones). */
    revokeTokens() {
      for (const token of seenTokens) revokedTokens.add(token);
    },
    /** The tool is gone from now on (sessions opened before keep the list they had, as a real server's would until it restarts). */
    removeTool(name: string) {
      removed.add(name);
      for (const transport of sessions.values()) void transport.close();
      sessions.clear();
    },
    /** The next `count` tools/call requests are read and their connection reset, before any tool runs (nothing is done). */
    resetNextCalls(count: number) {
      callsToReset = count;
    },
    /** How many of those are still to come. */
    callsToReset: () => callsToReset,
    /** Holds the recording tools' calls, before their side effect (or after it), until the returned release is called. */
    holdCalls(options: { afterEffect?: boolean } = {}): () => void {
      let release!: () => void;
      hold = { released: new Promise<void>((resolve) => (release = resolve)), afterEffect: options.afterEffect === true };
      return () => {
        hold = undefined;
        release();
      };
    },
    async close() {
      for (const transport of sessions.values()) await transport.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export type TestMcpServer = Awaited<ReturnType<typeof startTestMcpServer>>;
