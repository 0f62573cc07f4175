import type { ToolCallRow } from '../../db/schema.ts';
import { type Span, SpanKind, type Tracing } from '../../lib/tracing.ts';
import type { ModelStep } from './model-step.ts';
import type { Call, Message, Run, RunContext } from './run-context.ts';

export type RunTracing = Pick<Tracing, 'start' | 'continuing' | 'fail' | 'recordContent'>;

/**
 * Content goes into attributes only when OTEL_RECORD_CONTENT allows it and the span is recorded (its
 * text is made for nothing on a span the sampler dropped), cut to a size collectors take.
 */
const recordsContent = (tracing: RunTracing, span: Span) => tracing.recordContent && span.isRecording();
const content = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length > 16_000 ? `${text.slice(0, 16_000)}…` : text;
};

/** The agent a run (or an experiment's replay) is of: its chat spans leave it to this parent. */
export const agentAttributes = (context: Pick<RunContext, 'agentId' | 'agentName'>) => ({
  'agent_platform.agent.id': context.agentId ?? '',
  'gen_ai.agent.name': context.agentName ?? '',
});

/**
 * The spans of a run of an action, in the action's trace (its traceparent, from the ingest request or
 * the email notification): the run, and human decisions it resumes after. Names and attributes follow
 * the OpenTelemetry GenAI conventions where they apply. The first run carries the action's wait in the
 * queue as an attribute, not as a span of its own: the waterfall shows the wait as the gap before the
 * run, and a span fewer per action (with the chat spans' repeated attributes) made a trace about a
 * fifth cheaper (docs/benchmarks.md).
 */
export function startRunSpans(tracing: RunTracing, context: RunContext, calls: ToolCallRow[] | null, now: Date): Span {
  const parent = tracing.continuing(context.traceParent); // parsed once for the run's spans
  for (const call of calls ?? []) {
    // Decided by a person since the last run: the wait, from staging to the decision.
    if (call.status !== 'ready' || call.approval !== 'approved' || !call.decidedAt) continue;
    tracing
      .start(`approval.wait ${call.toolName}`, parent, {
        startTime: call.requestedAt,
        attributes: {
          'gen_ai.tool.name': call.toolName,
          'gen_ai.tool.call.id': call.toolCallId,
          'agent_platform.tool.mode': call.mode,
          'agent_platform.approval.decision': call.approval,
          'agent_platform.approval.channel': call.decisionChannel ?? 'deadline',
        },
      })
      .end(call.decidedAt);
  }
  return tracing.start('action.run', parent, {
    attributes: {
      'agent_platform.action.id': context.id,
      'agent_platform.org.id': context.orgId,
      ...agentAttributes(context),
      'agent_platform.event.type': context.eventType,
      'agent_platform.action.source': context.source,
      'agent_platform.action.takeovers': context.takeovers,
      // Never below 0: the database's clock (the creation) may run a little ahead of this process's.
      ...(!context.threadId && {
        'agent_platform.action.queue_wait_ms': Math.max(0, now.getTime() - context.createdAt.getTime()),
      }),
    },
  });
}

/**
 * A model call's span (`chat <model>`), ended by `endModelSpan`. The agent is its parent run's
 * attribute, and the provider `gen_ai.provider.name` alone (`gen_ai.system`, its deprecated name, is
 * not written twice).
 */
export function startModelSpan(
  tracing: RunTracing,
  run: Run,
  call: { provider: string; model: string; instructions: string },
): Span {
  const span = tracing.start(`chat ${call.model}`, run.span, {
    kind: SpanKind.CLIENT,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': call.provider,
      'gen_ai.request.model': call.model,
    },
  });
  if (recordsContent(tracing, span)) {
    span.setAttribute('gen_ai.system_instructions', content(call.instructions));
    span.setAttribute('gen_ai.input.messages', content(run.messages satisfies Message[]));
  }
  return span;
}

export function endModelSpan(
  tracing: RunTracing,
  span: Span,
  outcome: { step: ModelStep; costUsd: number | null } | { error: unknown },
) {
  if ('error' in outcome) tracing.fail(span, outcome.error);
  else {
    const { step, costUsd } = outcome;
    span.setAttributes({
      'gen_ai.usage.input_tokens': step.usage.inputTokens,
      'gen_ai.usage.output_tokens': step.usage.outputTokens,
      'gen_ai.usage.cache_read.input_tokens': step.usage.cachedInputTokens,
      'gen_ai.response.finish_reasons': [step.calls.length > 0 ? 'tool_calls' : 'stop'],
      'agent_platform.tool_calls': step.calls.length,
      ...(costUsd !== null && { 'agent_platform.cost_usd': costUsd }),
    });
    if (recordsContent(tracing, span)) span.setAttribute('gen_ai.output.messages', content([step.assistant]));
  }
  span.end();
}

/** A tool call's span (`execute_tool <tool>`), with its mode and how it was approved. */
export function startToolSpan(tracing: RunTracing, run: Run, call: Call): Span {
  const span = tracing.start(`execute_tool ${call.toolName}`, run.span, {
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': call.toolName,
      'gen_ai.tool.call.id': call.toolCallId,
      'agent_platform.tool.mode': call.mode,
      'agent_platform.tool.approval': call.approval,
    },
  });
  if (recordsContent(tracing, span)) span.setAttribute('gen_ai.tool.call.arguments', content(call.input));
  return span;
}

export function endToolSpan(tracing: RunTracing, span: Span, call: Call) {
  span.setAttribute('agent_platform.tool.status', call.status);
  if (call.status === 'failed') tracing.fail(span, new Error('the tool call failed'));
  if (recordsContent(tracing, span)) span.setAttribute('gen_ai.tool.call.result', content(call.output));
  span.end();
}
