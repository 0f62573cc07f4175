import type { z } from 'zod';
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
  inputSchema: z.ZodType<Input>;
  execute(input: Input, context: ToolContext): Promise<unknown>;
}

/** Defines a tool with its input type inferred from the schema. */
export function defineTool<Schema extends z.ZodType>(tool: {
  name: string;
  description: string;
  inputSchema: Schema;
  execute(input: z.output<Schema>, context: ToolContext): Promise<unknown>;
}): ToolDefinition<z.output<Schema>> {
  return tool as ToolDefinition<z.output<Schema>>;
}

/** The tools agents can call: defined in code, each with a zod input schema and a description. */
export function createToolRegistry() {
  const tools = new Map<string, ToolDefinition>();
  return {
    register(tool: ToolDefinition): void {
      if (!TOOL_NAME.test(tool.name)) throw new Error(`Invalid tool name "${tool.name}": letters, digits, _ and - only, at most 64`);
      if (tools.has(tool.name)) throw new Error(`A tool named "${tool.name}" is registered already`);
      tools.set(tool.name, tool);
    },
    get: (name: string): ToolDefinition | undefined => tools.get(name),
    has: (name: string): boolean => tools.has(name),
    list: (): ToolDefinition[] => [...tools.values()],
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
