import { ProtocolError, SdkError, SdkErrorCode, type CallToolResult, type Tool } from '@modelcontextprotocol/client';
import type { ListedMcpTool, McpServerRow } from '../../db/schema.ts';
import { TOOL_NAME } from '../agents/agents.schemas.ts';
import type { ToolDefinition } from '../agents/tool-registry.ts';
import { describe, mcpFailure } from './mcp-client.ts';
import type { McpConnections, McpTarget } from './mcp-connections.ts';

/** How agents name a server's tool: the server's name, two underscores, the tool's name. */
export const offeredName = (serverName: string, toolName: string) => `${serverName}__${toolName}`;
const MAX_DESCRIPTION = 10_000;
const MAX_SCHEMA_BYTES = 100_000;

/** A tool as the server listed it, offered to agents when its name and schema fit. */
export function listedTool(serverName: string, tool: Tool): ListedMcpTool {
  const name = offeredName(serverName, tool.name);
  const inputSchema = (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>;
  const annotations = Object.fromEntries(
    Object.entries(tool.annotations ?? {}).filter(([key, value]) =>
      key === 'title'
        ? typeof value === 'string'
        : ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'].includes(key) && typeof value === 'boolean',
    ),
  );
  let problem: string | null = null;
  if (!TOOL_NAME.test(name)) problem = `"${name}" is not a tool name the model providers accept (letters, digits, _ and -, at most 64)`;
  else if (inputSchema.type !== 'object') problem = 'its input schema is not an object schema';
  else if (JSON.stringify(inputSchema).length > MAX_SCHEMA_BYTES) problem = `its input schema is larger than ${MAX_SCHEMA_BYTES} bytes`;
  return {
    name: tool.name,
    description: (tool.description ?? tool.title ?? '').slice(0, MAX_DESCRIPTION),
    inputSchema,
    annotations,
    offeredAs: problem ? null : name,
    problem,
  };
}

/** Calling it again with the same input does no harm, by the server's word. */
export const isRepeatable = (tool: ListedMcpTool) => tool.annotations.readOnlyHint === true || tool.annotations.idempotentHint === true;

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
            { name: tool.name, arguments: input, toolCallId: context.toolCallId },
            { timeoutMs: deps.callTimeoutMs, signal: context.signal },
          );
        } catch (error) {
          throw new Error(callFailure(error, server.name, deps.callTimeoutMs));
        }
        if (result.isError) throw new Error(`the tool answered with an error: ${textOf(result) || '(no message)'}`);
        return bounded(result.structuredContent ?? contentValue(result), deps.maxResultBytes);
      },
    }));
}

/** What the model and the ledger are told when a call did not come back. */
function callFailure(error: unknown, serverName: string, timeoutMs: number): string {
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
    return `the MCP server "${serverName}" did not answer within ${timeoutMs / 1000} s; it may or may not have done it`;
  }
  if (error instanceof ProtocolError) return `the MCP server "${serverName}" refused the call: ${error.message}`;
  const failure = mcpFailure(error);
  if (failure === 'mcp_unauthorized') return `the MCP server "${serverName}" refused the credentials: ${describe(error)}`;
  if (failure === 'mcp_unreachable') return `the MCP server "${serverName}" could not be reached: ${describe(error)}`;
  return `the MCP server "${serverName}" failed: ${describe(error)}`;
}

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
