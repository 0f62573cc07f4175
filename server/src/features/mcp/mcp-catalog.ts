import type { Kysely } from 'kysely';
import type { DB, McpServerRow } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { BUS_TOPICS, INVALIDATE_ALL, type ProcessBus } from '../../lib/process-bus.ts';
import type { ToolDefinition, ToolSource } from '../agents/tool-registry.ts';
import type { McpEndpoint } from './mcp-client.ts';
import type { McpConnections, McpTarget } from './mcp-connections.ts';
import { mcpServersRepo } from './mcp-servers.repo.ts';
import { toolDefinitions } from './mcp-tools.ts';

/** How to reach a saved server, its credentials decrypted. */
export function endpointOf(row: McpServerRow, box: SecretBox): McpEndpoint {
  return {
    url: row.url,
    headers: row.headersEncrypted ? (JSON.parse(box.decrypt(row.headersEncrypted)) as Record<string, string>) : {},
    clientCredentials:
      row.auth && row.clientSecretEncrypted
        ? {
            clientId: row.auth.clientId,
            clientSecret: box.decrypt(row.clientSecretEncrypted),
            scope: row.auth.scope,
            issuer: row.auth.issuer ?? null,
          }
        : null,
  };
}

export const targetOf = (row: McpServerRow, box: SecretBox): McpTarget => ({
  id: row.id,
  version: row.updatedAt.getTime(),
  endpoint: endpointOf(row, box),
});

/**
 * The tools of each org's MCP servers as agents' tools, read once per org and kept until a server of
 * the org changes (in any process: the change is published on the bus).
 */
export function createMcpToolSource(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  bus: ProcessBus;
  connections: McpConnections;
  callTimeoutMs: number;
  maxResultBytes: number;
}): ToolSource {
  const cache = new Map<string, Promise<ToolDefinition[]>>();
  deps.bus.subscribe(BUS_TOPICS.mcpServers, (orgId) => (orgId === INVALIDATE_ALL ? cache.clear() : cache.delete(orgId)));
  return (orgId) => {
    let tools = cache.get(orgId);
    if (!tools) {
      tools = mcpServersRepo
        .list(deps.db, orgId)
        .then((servers) => servers.flatMap((server) => toolDefinitions(server, targetOf(server, deps.box), deps)));
      cache.set(orgId, tools);
      tools.catch(() => cache.delete(orgId));
    }
    return tools;
  };
}
