import {
  AuthorizationServerMismatchError,
  Client,
  IssuerMismatchError,
  OAuthError,
  ClientCredentialsProvider,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type CallToolResult,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import type { McpServerInfo } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import { OutboundRefused } from '../../lib/address-guard.ts';
import type { GuardedFetch } from '../../lib/guarded-fetch.ts';

/** How to reach one server: its URL, the headers sent on every request, or OAuth client credentials. */
export interface McpEndpoint {
  url: string;
  headers: Record<string, string>;
  clientCredentials: { clientId: string; clientSecret: string; scope: string | null; issuer: string | null } | null;
}

export interface McpConnection {
  serverInfo: McpServerInfo;
  /** Every page of tools/list, each tool as the server sent it (one malformed tool must not hide the others). */
  listTools(): Promise<unknown[]>;
  callTool(
    request: { name: string; arguments: unknown; toolCallId: string; actionId: string },
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<CallToolResult>;
  close(): Promise<void>;
}

/**
 * The `_meta` keys of a tools/call request that carry our tool call id and its action's, so that a server
 * can deduplicate: the tool call id is unique within its action only (a provider may give it again).
 */
export const TOOL_CALL_ID_META = 'io.agent-platform/tool-call-id';
export const ACTION_ID_META = 'io.agent-platform/action-id';
/** More tools than this from one server is refused: what an agent is offered must stay readable. */
export const MAX_TOOLS_PER_SERVER = 500;
const CLIENT_INFO = { name: 'agent-platform', version: '1.0.0' };
/** A page of tools/list read loosely: each tool is judged on its own (listedTool), not the page as a whole. */
const TOOLS_PAGE = z.object({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

/** Opens a session with the server: the transport, `initialize` and `notifications/initialized`. */
export async function connectMcp(
  endpoint: McpEndpoint,
  deps: { fetch: GuardedFetch; timeoutMs: number },
): Promise<McpConnection> {
  const credentials = endpoint.clientCredentials;
  const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
    fetch: deps.fetch,
    requestInit: { headers: endpoint.headers },
    redirectPolicy: 'same-origin',
    onInsufficientScope: 'throw',
    ...(credentials
      ? {
          authProvider: new ClientCredentialsProvider({
            clientId: credentials.clientId,
            clientSecret: credentials.clientSecret,
            ...(credentials.scope ? { scope: credentials.scope } : {}),
            ...(credentials.issuer ? { expectedIssuer: credentials.issuer } : {}),
          }),
        }
      : {}),
  });
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: deps.timeoutMs });
  } catch (error) {
    await client.close().catch(() => {});
    throw mcpError(error, endpoint.url);
  }
  const version = client.getServerVersion();
  const serverInfo: McpServerInfo = {
    name: version?.name ?? 'unknown',
    version: version?.version ?? 'unknown',
    protocolVersion: transport.protocolVersion ?? null,
  };
  return {
    serverInfo,
    async listTools() {
      const tools: unknown[] = [];
      let cursor: string | undefined;
      try {
        do {
          const page = await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, TOOLS_PAGE, {
            timeout: deps.timeoutMs,
          });
          tools.push(...page.tools);
          if (tools.length > MAX_TOOLS_PER_SERVER) {
            throw new AppError(
              'mcp_protocol',
              `The server lists more than ${MAX_TOOLS_PER_SERVER} tools; split it into smaller servers`,
            );
          }
          cursor = page.nextCursor;
        } while (cursor);
      } catch (error) {
        throw mcpError(error, endpoint.url);
      }
      return tools;
    },
    async callTool(request, options) {
      return (await client.callTool(
        {
          name: request.name,
          arguments: (request.arguments ?? {}) as Record<string, unknown>,
          _meta: { [TOOL_CALL_ID_META]: request.toolCallId, [ACTION_ID_META]: request.actionId },
        },
        { timeout: options.timeoutMs, signal: options.signal },
      )) as CallToolResult;
    },
    close: () => client.close(),
  };
}

/** An error of the connection as one of our codes, with the server's (or the network's) own words. */
export function mcpError(error: unknown, url: string): AppError {
  if (error instanceof AppError) return error;
  const words = describe(error);
  switch (mcpFailure(error)) {
    case 'mcp_unauthorized':
      return new AppError('mcp_unauthorized', `The MCP server at ${url} refused the credentials: ${words}`);
    case 'mcp_unreachable':
      return new AppError('mcp_unreachable', `The MCP server at ${url} could not be reached: ${words}`);
    default:
      return new AppError('mcp_protocol', `The server at ${url} did not answer as an MCP server: ${words}`);
  }
}

/** Which of our codes an error of the connection is: refused credentials, the network, or anything else (no MCP). */
export function mcpFailure(error: unknown): 'mcp_unauthorized' | 'mcp_unreachable' | 'mcp_protocol' {
  if (error instanceof AppError && (error.code === 'mcp_unauthorized' || error.code === 'mcp_unreachable')) return error.code;
  const refused =
    error instanceof UnauthorizedError ||
    (error instanceof SdkHttpError && (error.status === 401 || error.status === 403)) ||
    (error instanceof SdkError && isAuthCode(error.code));
  if (refused) return 'mcp_unauthorized';
  if (isNetworkError(error) || (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout))
    return 'mcp_unreachable';
  return isAuthorizationError(error) ? 'mcp_unauthorized' : 'mcp_protocol';
}

/** The OAuth flow failed: the authorization server refused the client, or is not the one the credentials are for. */
const isAuthorizationError = (error: unknown) =>
  causesOf(error).some(
    (cause) =>
      cause instanceof OAuthError || cause instanceof IssuerMismatchError || cause instanceof AuthorizationServerMismatchError,
  );

const isAuthCode = (code: SdkErrorCode) =>
  code === SdkErrorCode.ClientHttpAuthentication || code === SdkErrorCode.ClientHttpForbidden;

/** Refused by our guard, or the network failed (refused, unresolvable, reset, timed out). */
const isNetworkError = (error: unknown) =>
  causesOf(error).some((cause) => {
    if (cause instanceof OutboundRefused) return true;
    const code = (cause as NodeJS.ErrnoException).code;
    if (code && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code) && code !== 'UND_ERR_RESPONSE_STATUS_CODE') return true;
    return cause.name === 'TimeoutError' || cause.name === 'ConnectTimeoutError';
  });

/** The error and its causes, outermost first. */
export function causesOf(error: unknown): Error[] {
  const chain: Error[] = [];
  for (let cause = error; cause instanceof Error && chain.length < 10; cause = cause.cause) chain.push(cause);
  return chain;
}

/** The error's words with its causes', which carry what the network or the server said. */
export function describe(error: unknown): string {
  const parts: string[] = [];
  for (let cause: unknown = error; cause && parts.length < 4; cause = (cause as Error).cause) {
    const message = withShapeSummarized(cause instanceof Error ? cause.message : String(cause));
    if (message && !parts.some((part) => part.includes(message))) parts.push(message);
    if (!(cause instanceof Error)) break;
  }
  return (parts.join(': ') || 'unknown error').slice(0, 1000);
}

interface SchemaIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  errors?: SchemaIssue[][];
}

const isSchemaIssue = (value: unknown): value is SchemaIssue =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as SchemaIssue).code === 'string' &&
  typeof (value as SchemaIssue).message === 'string' &&
  Array.isArray((value as SchemaIssue).path);

/**
 * The SDK says an answer of the wrong shape with its schema check's issues as pretty-printed JSON (a
 * union's every branch included: a kilobyte of it for one wrong field), which then reaches people
 * and the model. Said instead in a line: the first few fields and what is wrong with each.
 */
function withShapeSummarized(message: string): string {
  const start = message.search(/\[\s*\{/);
  const end = message.lastIndexOf(']');
  if (start < 0 || end < start) return message;
  let issues: unknown;
  try {
    issues = JSON.parse(message.slice(start, end + 1));
  } catch {
    return message;
  }
  if (!Array.isArray(issues) || issues.length === 0 || !issues.every(isSchemaIssue)) return message;
  const leaves = leafIssues(issues, []);
  const said = leaves.slice(0, 3).map(({ path, message: what }) => `${path.map(String).join('.') || 'the answer'}: ${what}`);
  if (leaves.length > 3) said.push(`and ${leaves.length - 3} more`);
  return `${message.slice(0, start)}the answer does not have MCP's shape (${said.join('; ')})${message.slice(end + 1)}`;
}

/** The issues under a union: those of its closest branch (the one with the fewest), under the union's path. */
function leafIssues(issues: SchemaIssue[], prefix: PropertyKey[]): SchemaIssue[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    const branches = (issue.errors ?? []).filter((branch) => branch.length > 0 && branch.every(isSchemaIssue));
    if (issue.code !== 'invalid_union' || branches.length === 0) return [{ ...issue, path }];
    return leafIssues(
      branches.reduce((closest, branch) => (branch.length < closest.length ? branch : closest)),
      path,
    );
  });
}
