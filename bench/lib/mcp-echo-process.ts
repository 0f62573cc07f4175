// The MCP benchmark's server in a process of its own, as an organization's MCP server is: it says
// `{ url }` when it listens, answers `{ calls, sessions }` to `{ report: true }`, and closes on SIGTERM.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * The MCP benchmark's server on loopback, built with the official server SDK (session-based): one
 * `echo` tool that costs nothing itself, with no annotations (so that every call takes the safe path:
 * recorded as started before its request leaves), or `idempotent` (it may be repeated: no record).
 */
async function startEchoMcpServer(options: { idempotent?: boolean } = {}) {
  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();
  let calls = 0;
  const http = createServer(async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport) {
      const created: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      transport = created;
      const server = new McpServer({ name: 'bench', version: '1.0.0' });
      const annotations = options.idempotent ? { idempotentHint: true } : {};
      server.registerTool(
        'echo',
        { description: 'Returns its input.', inputSchema: z.object({ text: z.string() }), annotations },
        async (args) => {
          calls++;
          return { content: [{ type: 'text', text: args.text }] };
        },
      );
      await server.connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls: () => calls,
    sessions: () => sessions.size,
    close: async () => {
      for (const transport of sessions.values()) await transport.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

const server = await startEchoMcpServer({ idempotent: process.env.BENCH_MCP_IDEMPOTENT === '1' });
process.send?.({ url: server.url });
process.on('message', (message: { report?: boolean }) => {
  if (message.report) process.send?.({ calls: server.calls(), sessions: server.sessions() });
});
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
// The benchmark that forked it is gone (even SIGKILLed): nothing will ask it anything again.
process.on('disconnect', () => process.exit(0));
