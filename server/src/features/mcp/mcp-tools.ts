import { ProtocolError, SdkError, SdkErrorCode, type CallToolResult } from '@modelcontextprotocol/client';
import { AppError } from '../../lib/errors.ts';
import { storableJson } from '../../lib/json-input.ts';
import type { ListedMcpTool, McpServerRow } from '../../db/schema.ts';
import { TOOL_NAME } from '../agents/agents.schemas.ts';
import type { ToolDefinition } from '../agents/tool-registry.ts';
import { OutboundRefused } from '../../lib/address-guard.ts';
import { ResponseTooLarge } from '../../lib/guarded-fetch.ts';
import { causesOf, describe, mcpFailure } from './mcp-client.ts';
import type { McpConnections, McpTarget } from './mcp-connections.ts';

/** How agents name a server's tool: the server's name, two underscores, the tool's name. */
export const offeredName = (serverName: string, toolName: string) => `${serverName}__${toolName}`;
const MAX_DESCRIPTION = 10_000;
const MAX_SCHEMA_BYTES = 100_000;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown) => (typeof value === 'string' ? value : '');
/** Its length as JSON; one nested too deeply to write counts as too large. */
const jsonLength = (value: unknown) => {
  try {
    return JSON.stringify(value).length;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
};

/**
 * A tool as the server listed it, offered to agents when its name and schema fit; one that does not
 * is kept with its problem (and the rest of the server's tools are offered). Whatever it holds is
 * made storable.
 */
export function listedTool(serverName: string, tool: unknown): ListedMcpTool {
  const fields = isObject(tool) ? tool : {};
  const rawName = fields.name;
  const name = typeof rawName === 'string' ? rawName : String(JSON.stringify(rawName));
  const offered = offeredName(serverName, name);
  const rawSchema = fields.inputSchema ?? { type: 'object' };
  const schemaBytes = isObject(rawSchema) ? jsonLength(rawSchema) : 0;
  const annotations = Object.fromEntries(
    Object.entries(isObject(fields.annotations) ? fields.annotations : {}).filter(([key, value]) =>
      key === 'title'
        ? typeof value === 'string'
        : ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'].includes(key) && typeof value === 'boolean',
    ),
  );
  let problem: string | null = null;
  if (typeof rawName !== 'string') problem = 'its name is not a string';
  else if (!TOOL_NAME.test(offered))
    problem = `${JSON.stringify(offered)} is not a tool name the model providers accept (letters, digits, _ and -, at most 64)`;
  else if (!isObject(rawSchema) || rawSchema.type !== 'object') problem = 'its input schema is not an object schema';
  else if (schemaBytes > MAX_SCHEMA_BYTES) problem = `its input schema is larger than ${MAX_SCHEMA_BYTES} bytes`;
  // A schema too large or of the wrong kind is not kept: it is never offered, and the problem says why.
  const inputSchema = isObject(rawSchema) && schemaBytes <= MAX_SCHEMA_BYTES ? rawSchema : {};
  return storableJson<ListedMcpTool>({
    name,
    description: (text(fields.description) || text(fields.title)).slice(0, MAX_DESCRIPTION),
    inputSchema,
    annotations,
    offeredAs: problem ? null : offered,
    problem,
  }).value;
}

/** Calling it again with the same input does no harm, by the server's word. */
export const isRepeatable = (tool: ListedMcpTool) =>
  tool.annotations.readOnlyHint === true || tool.annotations.idempotentHint === true;

/** The server's tools as agents' tools: each call goes to the server on its shared session. */
export function toolDefinitions(
  server: McpServerRow,
  target: McpTarget,
  deps: { connections: McpConnections; callTimeoutMs: number; maxResultBytes: number },
): ToolDefinition[] {
  return server.tools
    .filter((tool) => tool.offeredAs)
    .map((tool) => ({
      name: tool.offeredAs!,
      description: tool.description,
      inputJsonSchema: tool.inputSchema,
      repeatable: isRepeatable(tool),
      server: { id: server.id, name: server.name, tool: tool.name, annotations: tool.annotations },
      async execute(input, context) {
        let result: CallToolResult;
        try {
          result = await deps.connections.callTool(
            target,
            { name: tool.name, arguments: input, toolCallId: context.toolCallId, actionId: context.actionId },
            { timeoutMs: deps.callTimeoutMs, signal: context.signal, repeatable: isRepeatable(tool) },
          );
        } catch (error) {
          throw new Error(callFailure(error, server.name, deps.callTimeoutMs));
        }
        if (result.isError) throw new Error(`the tool answered with an error: ${textOf(result) || '(no message)'}`);
        try {
          return bounded(result.structuredContent ?? contentValue(result), deps.maxResultBytes);
        } catch (error) {
          throw new Error(callFailure(error, server.name, deps.callTimeoutMs));
        }
      },
    }));
}

/** Network failures in which the request never reached the server: nothing can have been done. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

const SESSION_FAILURE: Partial<Record<string, string>> = {
  mcp_unauthorized: 'refused the credentials',
  mcp_unreachable: 'could not be reached',
};

const neverSent = (error: unknown) =>
  causesOf(error).some((cause) => cause instanceof OutboundRefused || NOT_SENT.has((cause as NodeJS.ErrnoException).code ?? ''));

/**
 * What the model and the ledger are told when a call did not come back. Only a call the server
 * refused (a JSON-RPC error, the credentials) or that never left is said not to have happened: once
 * the request was sent, whatever went wrong (a timeout, a lost connection, an answer too large or
 * unreadable), the server may have done it.
 */
export function callFailure(error: unknown, serverName: string, timeoutMs: number): string {
  const server = `the MCP server "${serverName}"`;
  const mayHave = 'it may or may not have done it';
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
    return `${server} did not answer within ${timeoutMs / 1000} s; ${mayHave}`;
  if (error instanceof ProtocolError) return `${server} refused the call: ${error.message}`;
  // The session could not be opened: the call never left.
  if (error instanceof AppError) return `${server} ${SESSION_FAILURE[error.code] ?? 'could not be used'}: ${describe(error)}`;
  const tooLarge = causesOf(error).find((cause) => cause instanceof ResponseTooLarge);
  if (tooLarge) return `${server} answered with more than ${tooLarge.limit} bytes, which were not read; ${mayHave}`;
  const failure = mcpFailure(error);
  if (failure === 'mcp_unauthorized') return `${server} refused the credentials: ${describe(error)}`;
  if (neverSent(error)) return `${server} could not be reached: ${describe(error)}`;
  if (failure === 'mcp_unreachable')
    return `the connection to ${server} failed before it answered (${describe(error)}); ${mayHave}`;
  return `${server}'s answer could not be read (${unreadable(error)}); ${mayHave}`;
}

const unreadable = (error: unknown) => (error instanceof RangeError ? 'it is nested too deeply' : describe(error));

const textOf = (result: CallToolResult) =>
  (result.content ?? [])
    .filter((part) => part.type === 'text')
    .map((part) => (part as { text: string }).text)
    .join('\n');

/** The content as the model sees it: the text when it is all text, else each part (binary parts by their type and size only). */
function contentValue(result: CallToolResult): unknown {
  const content = result.content ?? [];
  if (content.every((part) => part.type === 'text')) return textOf(result);
  return content.map((part) => {
    if (part.type === 'text') return part;
    if (part.type === 'image' || part.type === 'audio')
      return { type: part.type, mimeType: part.mimeType, bytes: Math.floor((part.data.length * 3) / 4) };
    return part;
  });
}

/** A result larger than the limit is cut, and the model is told so. */
function bounded(value: unknown, maxBytes: number): unknown {
  const json = JSON.stringify(value ?? null);
  if (Buffer.byteLength(json) <= maxBytes) return value ?? null;
  return {
    truncated: true,
    note: `The tool's result was ${Buffer.byteLength(json)} bytes, over the limit of ${maxBytes}: only its start is shown.`,
    start: Buffer.from(json)
      .subarray(0, maxBytes)
      .toString('utf8')
      .replace(/\uFFFD+$/, ''),
  };
}
