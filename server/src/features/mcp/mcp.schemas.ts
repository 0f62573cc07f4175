import { z } from 'zod';
import { orgParams } from '../../lib/http-schemas.ts';
import { toolAnnotationsSchema } from '../agents/agents.schemas.ts';

/** A server's name: the prefix of its tools' names, unique in the org. */
export const MCP_SERVER_NAME = /^[a-z0-9-]{1,32}$/;
const serverName = z.string().regex(MCP_SERVER_NAME, 'lower-case letters, digits and -, 1 to 32 characters');
const serverUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000)
  .describe('A Streamable HTTP endpoint of the MCP server');

/** Headers the transport sets itself, or that would break the request, cannot be given. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);
const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'an HTTP header name')
  .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), 'is set by the MCP transport itself');
// Visible ASCII, spaces and tabs: a line break would end the header.
const headerValue = z
  .string()
  .max(8000)
  .regex(/^[\t\x20-\x7e]*$/, 'printable ASCII without line breaks');
const headers = z
  .record(headerName, headerValue)
  .refine((value) => Object.keys(value).length <= 20, 'at most 20 headers')
  .describe(
    'Sent on every request to the server (credentials, for instance `Authorization: Bearer ...`); encrypted, never returned',
  );

const clientCredentials = z.object({
  type: z.literal('client_credentials'),
  clientId: z.string().min(1).max(500),
  clientSecret: z.string().min(1).max(2000),
  scope: z.string().max(1000).nullable().default(null),
  issuer: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .nullable()
    .default(null)
    .describe(
      "The authorization server's issuer: the client secret is sent to it only. Without it, to whichever one the MCP " +
        'server names',
    ),
});

export const mcpServerInput = z.object({
  name: serverName,
  url: serverUrl,
  headers: headers.default({}),
  auth: clientCredentials
    .nullable()
    .default(null)
    .describe('OAuth 2.1 client credentials, as an alternative to static headers: the token is fetched, cached and refreshed'),
});
export type McpServerInput = z.output<typeof mcpServerInput>;

/** A change: each field given replaces what was saved (headers as a whole); `auth: null` removes the client credentials. */
export const mcpServerPatch = z
  .object({ name: serverName, url: serverUrl, headers, auth: clientCredentials.nullable() })
  .partial()
  .refine((value) => Object.values(value).some((entry) => entry !== undefined), 'nothing to change');
export type McpServerPatch = z.output<typeof mcpServerPatch>;

export const mcpToolSchema = z.object({
  name: z.string().describe("The server's name for the tool"),
  offeredAs: z
    .string()
    .nullable()
    .describe('`<server>__<tool>`: the name agents use; null when the tool is not offered (see `problem`)'),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  annotations: toolAnnotationsSchema,
  problem: z.string().nullable(),
});

export const mcpServerSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  url: z.string(),
  headerHints: z.record(z.string(), z.string()).describe('Each header given, with the end of its value only'),
  auth: z
    .object({
      type: z.literal('client_credentials'),
      clientId: z.string(),
      scope: z.string().nullable(),
      issuer: z.string().nullable(),
      clientSecretHint: z.string(),
    })
    .nullable(),
  serverInfo: z.object({ name: z.string(), version: z.string(), protocolVersion: z.string().nullable() }).nullable(),
  tools: z.array(mcpToolSchema),
  toolsListedAt: z.date().nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
});

export const mcpTestResultSchema = z.object({
  serverInfo: mcpServerSchema.shape.serverInfo.unwrap(),
  tools: z.array(mcpToolSchema),
});

export const mcpServerParams = orgParams.extend({ id: z.uuid() });
