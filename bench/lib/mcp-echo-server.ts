import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { ownChild } from './harness.ts';

/**
 * The MCP benchmark's server on loopback, built with the official server SDK (session-based): one
 * `echo` tool that costs nothing itself, with no annotations (so that every call takes the safe path:
 * recorded as started before its request leaves), or `idempotent` (it may be repeated: no record).
 */
export async function startEchoMcpServer(options: { idempotent?: boolean } = {}) {
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

/**
 * The same server in a process of its own (lib/mcp-echo-process.ts), so that its answers do not wait
 * for the benchmark's client and model, and its CPU is counted apart.
 */
export async function forkEchoMcpServer(options: { idempotent?: boolean } = {}) {
  const child = ownChild(
    fork(join(import.meta.dirname, 'mcp-echo-process.ts'), {
      env: { ...process.env, BENCH_MCP_IDEMPOTENT: options.idempotent ? '1' : '0' },
    }),
  );
  const [{ url }] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the MCP server's process exited (${code}) before it listened`);
    }),
  ])) as [{ url: string }];
  return {
    url,
    pid: child.pid!,
    /** The tool calls it answered and the sessions it holds, so far. */
    async counts(): Promise<{ calls: number; sessions: number }> {
      const answer = once(child, 'message') as Promise<[{ calls: number; sessions: number }]>;
      child.send({ report: true });
      return (await answer)[0];
    },
    async close(): Promise<void> {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
