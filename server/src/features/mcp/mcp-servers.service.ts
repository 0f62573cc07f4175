import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB, ListedMcpTool, McpServerInfo, McpServerRow } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { outboundUrlProblem } from '../../lib/address-guard.ts';
import { BUS_TOPICS, type ProcessBus } from '../../lib/process-bus.ts';
import { endpointOf } from './mcp-catalog.ts';
import type { McpEndpoint } from './mcp-client.ts';
import type { McpConnections } from './mcp-connections.ts';
import type { McpServerInput, McpServerPatch } from './mcp.schemas.ts';
import { mcpServersRepo } from './mcp-servers.repo.ts';
import { listedTool } from './mcp-tools.ts';

const hint = (secret: string) => (secret.length > 8 ? `...${secret.slice(-4)}` : '...');

/** What is shown of a server: never a credential, only hints. */
function toPublic(row: McpServerRow) {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    headerHints: row.headerHints,
    auth: row.auth,
    serverInfo: row.serverInfo,
    tools: row.tools,
    toolsListedAt: row.toolsListedAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/**
 * An org's MCP servers. Saving one (created or changed) and refreshing it connect to the server and
 * list its tools first: a server that cannot be reached, refuses the credentials or speaks no MCP is
 * refused with its own words, and nothing is saved.
 */
export function createMcpServersService(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  bus: ProcessBus;
  connections: McpConnections;
  allowPrivateNetworks: boolean;
}) {
  const { db, box } = deps;

  /**
   * Connects and lists the tools. A URL the guard refuses is the request's fault when the request gave
   * it (`body/url`); a saved one (a refresh, a change that keeps the URL) was allowed when it was saved,
   * so the server is now unreachable: its name resolves elsewhere, or the deployment's rule changed.
   */
  async function list(
    name: string,
    endpoint: McpEndpoint,
    urlFrom: 'body' | 'saved' = 'body',
  ): Promise<{ serverInfo: McpServerInfo; tools: ListedMcpTool[] }> {
    const problem = await outboundUrlProblem(endpoint.url, { allowPrivateNetworks: deps.allowPrivateNetworks });
    if (problem) {
      const why = deps.allowPrivateNetworks ? '' : '; MCP servers must be on public addresses (MCP_ALLOW_PRIVATE_NETWORKS)';
      if (urlFrom === 'body') throw new AppError('validation_failed', `body/url: ${problem}${why}`);
      throw new AppError('mcp_unreachable', `The MCP server at ${endpoint.url} could not be reached: ${problem}${why}`);
    }
    return deps.connections.once(endpoint, async (connection) => ({
      serverInfo: connection.serverInfo,
      tools: (await connection.listTools()).map((tool) => listedTool(name, tool)),
    }));
  }

  /** The columns of a server's settings: the credentials encrypted, hints beside them. */
  function settings(input: { name: string; url: string; headers: Record<string, string>; auth: McpServerInput['auth'] }) {
    return {
      name: input.name,
      url: input.url,
      headersEncrypted: Object.keys(input.headers).length > 0 ? box.encrypt(JSON.stringify(input.headers)) : null,
      headerHints: JSON.stringify(Object.fromEntries(Object.entries(input.headers).map(([key, value]) => [key, hint(value)]))),
      auth: JSON.stringify(
        input.auth
          ? {
              type: input.auth.type,
              clientId: input.auth.clientId,
              scope: input.auth.scope,
              issuer: input.auth.issuer,
              clientSecretHint: hint(input.auth.clientSecret),
            }
          : null,
      ),
      clientSecretEncrypted: input.auth ? box.encrypt(input.auth.clientSecret) : null,
    };
  }

  const endpointFor = (input: Pick<McpServerInput, 'url' | 'headers' | 'auth'>): McpEndpoint => ({
    url: input.url,
    headers: input.headers,
    clientCredentials: input.auth
      ? {
          clientId: input.auth.clientId,
          clientSecret: input.auth.clientSecret,
          scope: input.auth.scope,
          issuer: input.auth.issuer,
        }
      : null,
  });

  async function requireServer(orgId: string, id: string): Promise<McpServerRow> {
    const server = await mcpServersRepo.find(db, orgId, id);
    if (!server) throw notFound('MCP server');
    return server;
  }

  async function requireFreeName(orgId: string, name: string, except?: string): Promise<void> {
    if (await mcpServersRepo.nameTaken(db, orgId, name, except)) throw nameTaken(name);
  }

  /**
   * A server's name is its tools' prefix: renamed or deleted while agents, rules or inbox assignments
   * name its tools, they would name tools that no longer exist, which a server created later under the
   * old name would give back to them. So it is refused until they name none (checked in the transaction
   * that renames or deletes).
   */
  async function requireToolsUnnamed(trx: Kysely<DB>, orgId: string, serverName: string, doing: string): Promise<void> {
    const naming = await mcpServersRepo.namingTools(trx, orgId, serverName);
    if (naming.length === 0) return;
    const which = naming.map(({ kind, name }) => `${kind} "${name}"`).join(', ');
    throw new AppError(
      'conflict',
      `The MCP server "${serverName}" cannot be ${doing} while these name its tools (${serverName}__...): ${which}. ` +
        `Take its tools out of them first.`,
    );
  }

  const nameTaken = (name: string) =>
    new AppError('conflict', `body/name: the organization has an MCP server named "${name}" already`);

  /** Saved: the org's tools are read again in every process; a changed server's session is opened anew. */
  async function changed(orgId: string, id: string): Promise<void> {
    deps.connections.forget(id);
    await deps.bus.publish(BUS_TOPICS.mcpServers, orgId);
  }

  const listed = (serverInfo: McpServerInfo, tools: ListedMcpTool[]) => ({
    serverInfo: JSON.stringify(serverInfo),
    tools: JSON.stringify(tools),
  });

  return {
    /** The connection test, before saving: what the server is and which of its tools agents would be offered. */
    test: (input: McpServerInput) => list(input.name, endpointFor(input)),

    async create(orgId: string, input: McpServerInput) {
      await requireFreeName(orgId, input.name);
      const { serverInfo, tools } = await list(input.name, endpointFor(input));
      try {
        const row = await mcpServersRepo.insert(db, {
          id: randomUUID(),
          orgId,
          ...settings(input),
          ...listed(serverInfo, tools),
        });
        await changed(orgId, row.id);
        return toPublic(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw nameTaken(input.name);
        throw error;
      }
    },

    async update(orgId: string, id: string, patch: McpServerPatch) {
      const row = await requireServer(orgId, id);
      const saved = endpointOf(row, box);
      const savedAuth = saved.clientCredentials && { type: 'client_credentials' as const, ...saved.clientCredentials };
      const merged = {
        name: patch.name ?? row.name,
        url: patch.url ?? row.url,
        headers: patch.headers ?? saved.headers,
        auth: patch.auth === undefined ? savedAuth : patch.auth,
      };
      if (patch.name) await requireFreeName(orgId, patch.name, id);
      const { serverInfo, tools } = await list(merged.name, endpointFor(merged), patch.url ? 'body' : 'saved');
      try {
        const updated = await db.transaction().execute(async (trx) => {
          if (merged.name !== row.name) await requireToolsUnnamed(trx, orgId, row.name, 'renamed');
          return mcpServersRepo.update(trx, orgId, id, { ...settings(merged), ...listed(serverInfo, tools) });
        });
        if (!updated) throw notFound('MCP server');
        await changed(orgId, id);
        return toPublic(updated);
      } catch (error) {
        if (isUniqueViolation(error)) throw nameTaken(merged.name);
        throw error;
      }
    },

    /** Lists the server's tools again (a tool it no longer has is no longer offered). */
    async refresh(orgId: string, id: string) {
      const row = await requireServer(orgId, id);
      const { serverInfo, tools } = await list(row.name, endpointOf(row, box), 'saved');
      // Deleted while its tools were listed: nothing to update.
      const updated = await mcpServersRepo.update(db, orgId, id, listed(serverInfo, tools));
      if (!updated) throw notFound('MCP server');
      await changed(orgId, id);
      return toPublic(updated);
    },

    list: async (orgId: string) => (await mcpServersRepo.list(db, orgId)).map(toPublic),
    get: async (orgId: string, id: string) => toPublic(await requireServer(orgId, id)),

    async remove(orgId: string, id: string): Promise<void> {
      const server = await requireServer(orgId, id);
      const removed = await db.transaction().execute(async (trx) => {
        await requireToolsUnnamed(trx, orgId, server.name, 'deleted');
        return mcpServersRepo.remove(trx, orgId, id);
      });
      if (!removed) throw notFound('MCP server');
      await changed(orgId, id);
    },

    /** For tool preferences: whether a server of one of the user's orgs offers this tool. */
    offeredToMember: (userId: string, toolName: string) => mcpServersRepo.offeredToMember(db, userId, toolName),
  };
}

export type McpServersService = ReturnType<typeof createMcpServersService>;
