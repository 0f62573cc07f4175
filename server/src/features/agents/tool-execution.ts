import type { Kysely } from 'kysely';
import type { DB, ToolCallRow } from '../../db/schema.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import type { ToolContext, ToolRegistry } from './tool-registry.ts';

const toJsonValue = (value: unknown): unknown => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

/**
 * Runs one call that may run and stores its result, which is what the model sees next: the tool's
 * return value, or its error as text (a bad input, a throw). Once stored, the call is never run again;
 * a crash before that runs it again with the same toolCallId, which tools use to stay idempotent.
 */
export async function executeToolCall(deps: { db: Kysely<DB>; tools: ToolRegistry; row: ToolCallRow; context: ToolContext }): Promise<void> {
  const { row } = deps;
  const tool = deps.tools.get(row.toolName);
  if (!tool) {
    await toolCallsRepo.finish(deps.db, row.id, 'failed', { type: 'error-text', value: `The tool "${row.toolName}" is no longer available.` });
    return;
  }
  const parsed = tool.inputSchema.safeParse(row.input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('; ');
    await toolCallsRepo.finish(deps.db, row.id, 'failed', { type: 'error-text', value: `Invalid input for ${row.toolName}: ${problems}` });
    return;
  }
  let output: { type: 'json'; value: unknown } | { type: 'error-text'; value: string };
  try {
    output = { type: 'json', value: toJsonValue(await tool.execute(parsed.data, deps.context)) };
  } catch (error) {
    output = { type: 'error-text', value: `${row.toolName} failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  await toolCallsRepo.finish(deps.db, row.id, output.type === 'json' ? 'completed' : 'failed', output);
}
