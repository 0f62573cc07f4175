import { z } from 'zod';
import type { McpToolAnnotations } from '../../db/schema.ts';
import { TOOL_NAME } from './agents.schemas.ts';

/** What a tool knows about the call it serves. `toolCallId` is stable across a resumed run: use it as an idempotency key. */
export interface ToolContext {
  orgId: string;
  actionId: string;
  userId: string;
  toolCallId: string;
  signal: AbortSignal;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds tools of every input type; each is typed where it is defined.
export interface ToolDefinition<Input = any> {
  name: string;
  description: string;
  /** Built-in tools: the input is checked with it before the tool runs, and the model sees it as JSON Schema. */
  inputSchema?: z.ZodType<Input>;
  /** Tools of an MCP server: the JSON Schema the model sees, as the server gave it (the server checks the input). */
  inputJsonSchema?: Record<string, unknown>;
  /**
   * Whether a second call with the same input does no harm, so that a run resumed after a crash may
   * call it again. Built-in tools are (they deduplicate by toolCallId); an MCP tool is when its
   * server says it is read-only or idempotent. Default true.
   */
  repeatable?: boolean;
  /** The MCP server a tool comes from, with what it says of the tool. */
  server?: { id: string; name: string; tool: string; annotations: McpToolAnnotations };
  execute(input: Input, context: ToolContext): Promise<unknown>;
}

/** An org's own tools, beside the built-in ones (its MCP servers'). */
export type ToolSource = (orgId: string) => Promise<ToolDefinition[]>;
/** The tools an org's agents can be given, by name. */
export type OrgTools = ReadonlyMap<string, ToolDefinition>;

/** Defines a tool with its input type inferred from the schema. */
export function defineTool<Schema extends z.ZodType>(tool: {
  name: string;
  description: string;
  inputSchema: Schema;
  execute(input: z.output<Schema>, context: ToolContext): Promise<unknown>;
}): ToolDefinition<z.output<Schema>> {
  return tool as ToolDefinition<z.output<Schema>>;
}

/**
 * The tools agents can call: the built-in ones, defined in code with a zod input schema, and each
 * org's own from its sources (MCP servers). A built-in name wins over an org's tool of the same name.
 */
export function createToolRegistry() {
  const tools = new Map<string, ToolDefinition>();
  const sources: ToolSource[] = [];
  return {
    register(tool: ToolDefinition): void {
      if (!TOOL_NAME.test(tool.name))
        throw new Error(`Invalid tool name "${tool.name}": letters, digits, _ and - only, at most 64`);
      if (tools.has(tool.name)) throw new Error(`A tool named "${tool.name}" is registered already`);
      tools.set(tool.name, tool);
    },
    addSource(source: ToolSource): void {
      sources.push(source);
    },
    /** A built-in tool. */
    get: (name: string): ToolDefinition | undefined => tools.get(name),
    has: (name: string): boolean => tools.has(name),
    list: (): ToolDefinition[] => [...tools.values()],
    /** The built-in tools and the org's own. */
    async forOrg(orgId: string): Promise<OrgTools> {
      const all = new Map(tools);
      for (const source of sources) for (const tool of await source(orgId)) if (!all.has(tool.name)) all.set(tool.name, tool);
      return all;
    },
  };
}

export type ToolRegistry = ReturnType<typeof createToolRegistry>;

/** Loads the `tools` export of each module (TOOL_MODULES): how a self-hosted install adds its own tools. */
export async function registerToolModules(registry: ToolRegistry, paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const module = (await import(path)) as { tools?: unknown };
    if (!Array.isArray(module.tools)) throw new Error(`Tool module ${path} must export an array named "tools"`);
    for (const tool of module.tools as ToolDefinition[]) registry.register(tool);
  }
}

const jsonSchemas = new WeakMap<ToolDefinition, Record<string, unknown>>();

/** A tool's input schema as JSON Schema: converted once per built-in tool; an MCP tool's as its server gave it. */
export function inputJsonSchema(definition: ToolDefinition): Record<string, unknown> {
  let schema = jsonSchemas.get(definition);
  if (!schema) {
    const { $schema: _, ...given } = definition.inputJsonSchema ?? { type: 'object' };
    schema = definition.inputSchema
      ? (z.toJSONSchema(definition.inputSchema, { io: 'input' }) as Record<string, unknown>)
      : given;
    jsonSchemas.set(definition, schema);
  }
  return schema;
}
