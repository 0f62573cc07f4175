import type { ToolContext, ToolDefinition } from '../agents/tool-registry.ts';

const toJsonValue = (value: unknown): unknown => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

/**
 * Runs one call that may run; its result is what the model sees next: the tool's return value, or
 * its error as text (a bad input, a throw). The caller stores it: once stored, the call is never run
 * again; a crash before that runs it again with the same toolCallId, which tools use to stay idempotent.
 */
export async function runToolCall(tool: ToolDefinition | undefined, call: { toolName: string; input: unknown }, context: ToolContext) {
  const output = await outputOf(tool, call, context);
  return { status: output.type === 'json' ? ('completed' as const) : ('failed' as const), output };
}

async function outputOf(tool: ToolDefinition | undefined, call: { toolName: string; input: unknown }, context: ToolContext) {
  if (!tool) return { type: 'error-text' as const, value: `The tool "${call.toolName}" is no longer available.` };
  let input = call.input;
  if (tool.inputSchema) {
    const parsed = tool.inputSchema.safeParse(call.input);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('; ');
      return { type: 'error-text' as const, value: `Invalid input for ${call.toolName}: ${problems}` };
    }
    input = parsed.data;
  }
  try {
    return { type: 'json' as const, value: toJsonValue(await tool.execute(input, context)) };
  } catch (error) {
    return { type: 'error-text' as const, value: `${call.toolName} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
