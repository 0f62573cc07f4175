import { randomUUID } from 'node:crypto';
import { jsonSchema, tool, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import {
  asLanguageModelUsage,
  convertToLanguageModelPrompt,
  logWarnings,
  parseToolCall,
  prepareRetries,
  prepareToolChoice,
  prepareTools,
  resolveLanguageModel,
  standardizePrompt,
} from 'ai/internal';
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

/**
 * One step of `generateText` made of the SDK's own parts (`ai/internal`, the ones `generateText`
 * calls): the prompt standardized and converted, the tools prepared, the provider called with the
 * SDK's retries, the tool calls parsed (an unparsable or unknown one marked invalid), the text and
 * the usage read. What `generateText` adds around them (its loop of steps, callbacks, telemetry,
 * result objects and their copies of the messages) is unused here and cost about 0.1 ms of CPU a
 * call (docs/benchmarks.md), two calls to an answered email.
 */
async function generateStep(
  options: { model: LanguageModel; instructions: string; messages: ModelMessage[]; tools: ToolSet; maxRetries: number },
  abortSignal: AbortSignal,
) {
  const model = resolveLanguageModel(options.model);
  const instructions = options.instructions || undefined;
  const prompt = await convertToLanguageModelPrompt({
    prompt: await standardizePrompt({ instructions, messages: options.messages }),
    supportedUrls: await model.supportedUrls,
    download: undefined,
    abortSignal,
    provider: model.provider.split('.')[0],
  });
  const tools = await prepareTools({ tools: options.tools });
  const { retry } = prepareRetries({ maxRetries: options.maxRetries, abortSignal });
  const answer = await retry(() =>
    model.doGenerate({ prompt, tools, toolChoice: prepareToolChoice({ toolChoice: undefined }), abortSignal }),
  );
  logWarnings({ warnings: answer.warnings ?? [], provider: model.provider, model: model.modelId });
  const calls: ProposedCall[] = [];
  for (const part of answer.content) {
    if (part.type !== 'tool-call') continue;
    const call = await parseToolCall({
      toolCall: part,
      tools: options.tools,
      repairToolCall: undefined,
      instructions,
      messages: options.messages,
      abortSignal,
    });
    calls.push({
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.input,
      invalid: (call as { invalid?: boolean }).invalid === true,
    });
  }
  let text = '';
  for (const part of answer.content) if (part.type === 'text') text += part.text;
  return { text, calls, usage: asLanguageModelUsage(answer.usage) };
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
  let answer: Awaited<ReturnType<typeof generateStep>>;
  try {
    answer = await generateStep(options, AbortSignal.any([options.signal, limit.signal]));
  } catch (error) {
    if (limit.expired)
      throw new ModelCallError(`The model did not answer within ${options.timeoutMs / 1000} s`, { cause: error });
    throw new ModelCallError(`The model call failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  } finally {
    limit.clear();
  }
  const { text, usage } = answer;
  const calls = uniqueCallIds(answer.calls, options.messages);
  const assistant: unknown[] = [];
  if (text) assistant.push({ type: 'text', text });
  for (const call of calls)
    assistant.push({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.input ?? {} });
  return {
    assistant: { role: 'assistant', content: assistant },
    text,
    calls,
    usage: {
      inputTokens: usage.inputTokens ?? 0,
      outputTokens: usage.outputTokens ?? 0,
      cachedInputTokens: usage.inputTokenDetails?.cacheReadTokens ?? 0,
    },
  };
}

/**
 * The calls with ids unique in the conversation, which keys each call and its result (and the action's
 * stored calls). A provider's own id is kept, but one that is empty or was used already (some servers
 * number each step's calls from 0 again, or give every call the same id) gets a fresh one: stored
 * under the provider's id, the second call would have collided with the first.
 */
function uniqueCallIds(calls: ProposedCall[], messages: ModelMessage[]): ProposedCall[] {
  const parts = messages.flatMap((message): readonly object[] => (Array.isArray(message.content) ? message.content : []));
  const used = new Set(parts.flatMap((part) => ('toolCallId' in part ? [String(part.toolCallId)] : [])));
  return calls.map((call) => {
    const toolCallId =
      call.toolCallId && !used.has(call.toolCallId) ? call.toolCallId : `call_${randomUUID().replaceAll('-', '')}`;
    used.add(toolCallId);
    return toolCallId === call.toolCallId ? call : { ...call, toolCallId };
  });
}
