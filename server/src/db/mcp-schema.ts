import type { Selectable } from 'kysely';
import type { CreatedAt, JsonOf, UpdatedAt } from './schema.ts';

/** The org's MCP servers (schema.ts lists every table in DB). */

/** What a server says of a tool's behaviour: hints, trusted only as far as the org trusts the server. */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A tool as its server listed it, and whether agents are offered it. */
export interface ListedMcpTool {
  /** The server's own name for the tool. */
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: McpToolAnnotations;
  /** `<server name>__<tool name>` when agents are offered it; null, with `problem`, when not. */
  offeredAs: string | null;
  problem: string | null;
}

/**
 * OAuth 2.1 client credentials (the MCP authorization spec's machine-to-machine flow); the secret is a column of its
 * own, encrypted.
 */
export interface McpClientCredentials {
  type: 'client_credentials';
  clientId: string;
  scope: string | null;
  /** The authorization server the secret may be sent to; null: the one the MCP server names. */
  issuer: string | null;
  clientSecretHint: string;
}

export interface McpServerInfo {
  name: string;
  version: string;
  protocolVersion: string | null;
}

export interface McpServersTable {
  id: string;
  orgId: string;
  name: string;
  url: string;
  /** JSON of the headers sent on every request, encrypted; null when there are none. */
  headersEncrypted: string | null;
  headerHints: JsonOf<Record<string, string>>;
  auth: JsonOf<McpClientCredentials | null>;
  clientSecretEncrypted: string | null;
  serverInfo: JsonOf<McpServerInfo | null>;
  tools: JsonOf<ListedMcpTool[]>;
  toolsListedAt: Date | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export type McpServerRow = Selectable<McpServersTable>;
