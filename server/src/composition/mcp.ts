import { createMcpToolSource } from '../features/mcp/mcp-catalog.ts';
import { createMcpConnections } from '../features/mcp/mcp-connections.ts';
import { createMcpServersService } from '../features/mcp/mcp-servers.service.ts';
import { createGuardedFetch } from '../lib/guarded-fetch.ts';
import type { Shared } from './shared.ts';

/** Responses from an MCP server past this are not read at all (a result is cut to MCP_MAX_RESULT_BYTES before). */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** The org's MCP servers, the sessions this process holds with them, and their tools as agents' tools. */
export function composeMcp({ config, db, box, bus, logger }: Shared) {
  const { mcp } = config;
  const fetch = createGuardedFetch({
    allowPrivateNetworks: mcp.allowPrivateNetworks,
    connectTimeoutMs: mcp.connectTimeoutMs,
    maxResponseBytes: Math.max(MAX_RESPONSE_BYTES, 4 * mcp.maxResultBytes),
  });
  const connections = createMcpConnections({ fetch, connectTimeoutMs: mcp.connectTimeoutMs, logger });
  return {
    connections,
    mcpServers: createMcpServersService({ db, box, bus, connections, allowPrivateNetworks: mcp.allowPrivateNetworks }),
    toolSource: createMcpToolSource({
      db,
      box,
      bus,
      connections,
      callTimeoutMs: mcp.callTimeoutMs,
      maxResultBytes: mcp.maxResultBytes,
    }),
  };
}
