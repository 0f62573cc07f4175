import { REPLACED_NOTE, storableJson, storableText } from '../../lib/json-input.ts';
import type { ToolContext, ToolDefinition } from '../agents/tool-registry.ts';

/**
 * A tool's result as it is stored (and shown to the model): whatever a tool or a server returned is
 * kept; characters the database cannot hold are replaced, and the result says so.
 */
function storedResult(result: unknown): unknown {
  const { value, replaced } = storableJson(result);
  return replaced === 0 ? value : { value, note: `The tool's result was changed: ${REPLACED_NOTE(replaced)}.` };
}

/**
 * Runs one call that may run; its result is what the model sees next: the tool's return value, or
 * its error as text (a bad input, a throw). The caller stores it: once stored, the call is never run
 * again; a crash before that runs it again with the same toolCallId, which tools use to stay idempotent.
 */
export async function runToolCall(
  tool: ToolDefinition | undefined,
  call: { toolName: string; input: unknown },
  context: ToolContext,
) {
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
  let result: unknown;
  try {
    result = await tool.execute(input, context);
  } catch (error) {
    return { type: 'error-text' as const, value: storableText(`${call.toolName} failed: ${messageOf(error)}`) };
  }
  try {
    return { type: 'json' as const, value: storedResult(result) };
  } catch (error) {
    // It ran: what it returned cannot be kept (a cycle, a BigInt, nesting too deep), but it must not read as not run.
    const problem =
      `${call.toolName} ran, but its result could not be stored (${messageOf(error)}); ` + 'it may or may not have done it';
    return { type: 'error-text' as const, value: storableText(problem) };
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
