import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A tools/call the server received: what a real system would have acted on. */
export interface ScriptedCall {
  name: string;
  arguments: unknown;
}

export interface ScriptedMcpServerOptions {
  /** The tools as tools/list lists them, whatever their shape (a hostile or careless server's too). */
  tools: unknown[];
  /** Tools per tools/list page (all on one page by default). */
  pageSize?: number;
  serverInfo?: { name: string; version: string };
  /**
   * The raw JSON text of a tools/call answer's `result` (after the call was recorded as received):
   * the test writes exactly the bytes the server sends, NULs, lone surrogates and all.
   */
  answer?: (call: ScriptedCall) => string;
}

/**
 * A stateless MCP server written by hand, answering JSON (no SSE, no session) as the protocol allows,
 * with exactly the bytes a test scripts: for servers of other makes and for servers that misbehave.
 * `/moved` redirects to `/mcp`.
 */
export async function startScriptedMcpServer(options: ScriptedMcpServerOptions) {
  const calls: ScriptedCall[] = [];
  const pageSize = options.pageSize ?? Number.POSITIVE_INFINITY;
  /** While set, tools/list answers wait for it (a test holds a listing in flight). */
  let listHold: Promise<void> | undefined;
  let listings = 0;
  const http = createServer((req, res) => {
    if (req.url === '/moved') {
      res.writeHead(307, { location: '/mcp' }).end();
      return;
    }
    // No server-sent stream (GET) and no session to end (DELETE): the transport's answer is 405.
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', async () => {
      const message = JSON.parse(body) as {
        id?: number;
        method: string;
        params?: { cursor?: string; name?: string; arguments?: unknown };
      };
      if (message.id === undefined) return void res.writeHead(202).end();
      const send = (resultJson: string) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(`{"jsonrpc":"2.0","id":${message.id},"result":${resultJson}}`);
      if (message.method === 'initialize') {
        return send(
          JSON.stringify({
            protocolVersion: '2025-06-18',
            capabilities: { tools: {} },
            serverInfo: options.serverInfo ?? { name: 'scripted', version: '0.1' },
          }),
        );
      }
      if (message.method === 'tools/list') {
        listings++;
        await listHold;
        const start = Number(message.params?.cursor ?? 0);
        const next = start + pageSize < options.tools.length ? String(start + pageSize) : undefined;
        return send(
          JSON.stringify({ tools: options.tools.slice(start, start + pageSize), ...(next ? { nextCursor: next } : {}) }),
        );
      }
      if (message.method === 'tools/call' && options.answer) {
        const call = { name: message.params?.name ?? '', arguments: message.params?.arguments };
        calls.push(call);
        return send(options.answer(call));
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    base,
    url: `${base}/mcp`,
    calls,
    /** tools/list requests received (held ones included). */
    get listings() {
      return listings;
    },
    /** Holds tools/list answers until the returned release is called. */
    holdListing(): () => void {
      const { promise, resolve } = Promise.withResolvers<void>();
      listHold = promise;
      return () => {
        listHold = undefined;
        resolve();
      };
    },
    close: () => {
      http.closeAllConnections();
      return new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export type ScriptedMcpServer = Awaited<ReturnType<typeof startScriptedMcpServer>>;

/** A tool as a well-behaved server lists it. */
export const scriptedTool = (name: string, annotations: Record<string, unknown> = {}) => ({
  name,
  description: `Tool ${name}`,
  inputSchema: { type: 'object', properties: {} },
  annotations,
});
