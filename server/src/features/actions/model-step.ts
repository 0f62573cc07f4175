import { generateText, jsonSchema, tool, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import type { ModeSource, ToolCallMode } from '../../db/schema.ts';
import { withApprovalDecision } from './approval-policy.ts';
import { inputJsonSchema, type ToolDefinition } from '../agents/tool-registry.ts';
import type { TokenUsage } from '../../lib/model-prices.ts';
import { deadline } from '../../lib/deadline.ts';

/** One tool of a run: its definition and the mode its calls get. */
export interface ToolPlan {
  definition: ToolDefinition;
  mode: ToolCallMode;
  /** What decided the mode (an argument rule may make one call stricter). */
  source: ModeSource;
}

export interface ProposedCall {
  toolCallId: string;
  toolName: string;
  /** Parsed JSON, or the raw text when the model's arguments were not JSON. */
  input: unknown;
  /** The arguments could not be parsed, or the tool does not exist. */
  invalid: boolean;
}

export interface ModelStep {
  assistant: { role: 'assistant'; content: unknown[] };
  text: string;
  calls: ProposedCall[];
  /** What the provider reported it used (a count it did not report is 0). */
  usage: TokenUsage;
}

export class ModelCallError extends Error {
  override name = 'ModelCallError';
}

/**
 * The tools as the model sees them. They have no `execute`: the SDK only proposes calls, and the
 * runner decides, stores and runs them, so every step is persisted before the next one. The schema is
 * JSON Schema without SDK-side validation, so a malformed call reaches the approval policy (which
 * must stage it in `agent` mode) instead of failing inside the SDK.
 */
export function modelTools(plans: Map<string, ToolPlan>): ToolSet {
  const tools: ToolSet = {};
  for (const [name, plan] of plans) {
    const schema = inputJsonSchema(plan.definition);
    tools[name] = tool({
      description: plan.definition.description,
      inputSchema: jsonSchema(plan.mode === 'agent' ? withApprovalDecision(schema) : schema),
    });
  }
  return tools;
}

/** One model call: the conversation so far in, the assistant's message and its proposed tool calls out. */
export async function callModel(options: {
  model: LanguageModel;
  instructions: string;
  messages: ModelMessage[];
  tools: ToolSet;
  /** For the whole call, retries included. */
  timeoutMs: number;
  /** Retries of a failed call that may succeed again (5xx, 429, network), with the SDK's backoff. */
  maxRetries: number;
  signal: AbortSignal;
}): Promise<ModelStep> {
  const limit = deadline(options.timeoutMs);
  let result: Awaited<ReturnType<typeof generateText>>;
  try {
    result = await generateText({
      model: options.model,
      instructions: options.instructions || undefined,
      messages: options.messages,
      tools: options.tools,
      maxRetries: options.maxRetries,
      abortSignal: AbortSignal.any([options.signal, limit.signal]),
      // The service traces its model calls itself (run-tracing.ts) and registers no telemetry
      // integration with the SDK, whose own telemetry (a tracing channel and its events, built at each
      // call) only cost CPU: about 0.05 ms a call (docs/benchmarks.md).
      telemetry: { isEnabled: false },
    });
  } catch (error) {
    if (limit.expired)
      throw new ModelCallError(`The model did not answer within ${options.timeoutMs / 1000} s`, { cause: error });
    throw new ModelCallError(`The model call failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  } finally {
    limit.clear();
  }
  const calls: ProposedCall[] = [];
  for (const part of result.content) {
    if (part.type !== 'tool-call') continue;
    calls.push({
      toolCallId: part.toolCallId,
      toolName: part.toolName,
      input: part.input,
      invalid: (part as { invalid?: boolean }).invalid === true,
    });
  }
  const content: unknown[] = [];
  if (result.text) content.push({ type: 'text', text: result.text });
  for (const call of calls)
    content.push({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.input ?? {} });
  const { usage } = result;
  return {
    assistant: { role: 'assistant', content },
    text: result.text,
    calls,
    usage: {
      inputTokens: usage.inputTokens ?? 0,
      outputTokens: usage.outputTokens ?? 0,
      cachedInputTokens: usage.inputTokenDetails?.cacheReadTokens ?? 0,
    },
  };
}
