import type { CallToolResult } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { GuardedFetch } from '../../lib/guarded-fetch.ts';
import { causesOf, connectMcp, describe, mcpError, type McpConnection, type McpEndpoint } from './mcp-client.ts';

/** A server as the connections know it: its id, a version that changes with its settings, how to reach it. */
export interface McpTarget {
  id: string;
  version: number;
  endpoint: McpEndpoint;
}

/** Sessions idle this long are closed. */
const IDLE_MS = 5 * 60_000;

/**
 * The connection was reset or closed under the request, before any answer: most often a kept-alive
 * one that the server had just closed.
 */
const LOST_CONNECTION = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

const connectionLost = (error: unknown) =>
  causesOf(error).some((cause) => LOST_CONNECTION.has((cause as NodeJS.ErrnoException).code ?? ''));

/**
 * The MCP sessions of this process: one per server, opened on first use and shared by the calls of
 * every run (initialize once, not per call), opened again when the server's settings change or its
 * session is gone (the server restarted), and closed when idle.
 */
export function createMcpConnections(deps: { fetch: GuardedFetch; connectTimeoutMs: number; logger: Logger }) {
  const open = new Map<string, { version: number; connection: Promise<McpConnection>; lastUsed: number }>();
  const connect = (endpoint: McpEndpoint) => connectMcp(endpoint, { fetch: deps.fetch, timeoutMs: deps.connectTimeoutMs });

  function drop(id: string, connection?: Promise<McpConnection>): void {
    const entry = open.get(id);
    if (!entry || (connection && entry.connection !== connection)) return;
    open.delete(id);
    entry.connection.then((c) => c.close()).catch(() => {});
  }

  function sessionFor(target: McpTarget): Promise<McpConnection> {
    const entry = open.get(target.id);
    if (entry && entry.version === target.version) {
      entry.lastUsed = performance.now();
      return entry.connection;
    }
    if (entry) drop(target.id);
    const connection = connect(target.endpoint);
    open.set(target.id, { version: target.version, connection, lastUsed: performance.now() });
    connection.catch(() => drop(target.id, connection));
    return connection;
  }

  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [id, entry] of open) if (now - entry.lastUsed > IDLE_MS) drop(id);
  }, 60_000);
  sweep.unref();

  return {
    /** A session of its own for a connection test or a listing, closed after `use`. */
    async once<T>(endpoint: McpEndpoint, use: (connection: McpConnection) => Promise<T>): Promise<T> {
      const connection = await connect(endpoint);
      try {
        return await use(connection);
      } finally {
        await connection.close().catch(() => {});
      }
    },

    /**
     * One tools/call on the server's shared session. A session the server no longer knows (404: it
     * restarted) never reached the tool: the call is sent once more on a new session. A repeatable
     * call (read-only or idempotent, by the server's word) whose connection was lost before it
     * answered is sent once more too, as HTTP clients resend an idempotent request on a kept-alive
     * connection the server closed under it. Any other failure is the call's: it is not repeated here.
     */
    async callTool(
      target: McpTarget,
      request: Parameters<McpConnection['callTool']>[0],
      options: { timeoutMs: number; signal: AbortSignal; repeatable: boolean },
    ): Promise<CallToolResult> {
      for (let attempt = 0; ; attempt++) {
        const session = sessionFor(target);
        let connection: McpConnection;
        try {
          connection = await session;
        } catch (error) {
          throw mcpError(error, target.endpoint.url);
        }
        try {
          return await connection.callTool(request, options);
        } catch (error) {
          const words = describe(error);
          const sessionGone = (error as { status?: number }).status === 404 || /session not found/i.test(words);
          if (sessionGone || /connection closed/i.test(words)) drop(target.id, session);
          if (attempt === 0 && (sessionGone || (options.repeatable && connectionLost(error)))) continue;
          throw error;
        }
      }
    },

    /** The server changed or was deleted: its session is closed (the next call opens one with the new settings). */
    forget: (id: string) => drop(id),

    async close(): Promise<void> {
      clearInterval(sweep);
      for (const id of [...open.keys()]) drop(id);
      await deps.fetch.close();
      deps.logger.debug('MCP sessions closed');
    },
  };
}

export type McpConnections = ReturnType<typeof createMcpConnections>;
