import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { ModelProvider } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { ModelResolver } from '../agents/model-provider.ts';
import type { ModelMeter } from '../usage/model-meter.ts';
import { type ActionWrite, messageRow } from './action-writes.ts';
import { continuationOf, expectedUsage } from './budget-hold.ts';
import { callModel, type ModelStep } from './model-step.ts';
import { ActionFailure, decideCall, instructionsOf, type Run, toRow } from './run-context.ts';
import { endModelSpan, type RunTracing, startModelSpan } from './run-tracing.ts';
import type { RunEffects } from './run-effects.ts';

export interface ModelTurnDeps {
  resolveModel: ModelResolver;
  defaultProvider: ModelProvider;
  limits: { maxSteps: number; modelTimeoutMs: number; modelMaxRetries: number };
  /** Budgets and the run-as user's limits, checked before each model call; what each call used and cost. */
  meter: ModelMeter;
  tracing: RunTracing;
  clock: Clock;
}

/** The model's turn in a run: one model call, checked against the budgets before, stored with its usage after. */
export function createModelTurn(
  deps: ModelTurnDeps & { effects: Pick<RunEffects, 'store' | 'finish' | 'hold' | 'overBudget'>; stopping: AbortSignal },
) {
  const { store, finish } = deps.effects;
  /**
   * One model step, stored with its model call; an answer without tool calls completes the action in
   * the same statement. Budgets and the run-as user's limits are checked first: over a budget, the
   * action pauses for a person or fails, as the budget says.
   */
  return async function takeModelStep(run: Run): Promise<'done' | 'continue' | 'paused'> {
    const { context } = run;
    const steps = run.messages.filter((message) => message.role === 'assistant').length;
    if (steps >= deps.limits.maxSteps)
      throw new ActionFailure(`The action reached its limit of ${deps.limits.maxSteps} model steps`);
    const model = deps.resolveModel(context);
    const instructions = instructionsOf(context, run.plans);
    const continuation = continuationOf(run);
    const admission = await deps.meter.admit({
      orgId: context.orgId,
      agentId: context.agentId!,
      agentName: context.agentName,
      userId: context.runAsUserId!,
      provider: context.provider ?? deps.defaultProvider,
      model: typeof model === 'string' ? model : model.modelId,
      expected: () => expectedUsage(instructions, run),
      overBudget: continuation !== undefined,
    });
    if (admission.kind === 'refused') {
      run.span.addEvent('model call refused', { reason: admission.reason });
      return deps.effects.overBudget(run, admission);
    }
    const { ticket } = admission;
    const startedAt = performance.now();
    const span = startModelSpan(deps.tracing, run, { ...ticket.call, instructions });
    let step: ModelStep;
    try {
      step = await callModel({
        model,
        instructions,
        tools: run.tools,
        timeoutMs: deps.limits.modelTimeoutMs,
        maxRetries: deps.limits.modelMaxRetries,
        // A model call has no side effect: a stopping process abandons it (tool calls it lets finish).
        signal: AbortSignal.any([run.signal, deps.stopping]),
        messages: run.messages as ModelMessage[],
      });
    } catch (error) {
      endModelSpan(deps.tracing, span, { error });
      await deps.meter.settle(ticket, null);
      throw error;
    }
    const now = deps.clock.now();
    const costUsd = await deps.meter.settle(ticket, step.usage);
    endModelSpan(deps.tracing, span, { step, costUsd });
    const stepWrite: Pick<ActionWrite, 'modelCall' | 'finishedCall'> = {
      modelCall: {
        id: randomUUID(),
        orgId: context.orgId,
        actionId: context.id,
        agentId: context.agentId,
        userId: context.runAsUserId,
        provider: ticket.call.provider,
        model: ticket.call.model,
        ...step.usage,
        costUsd,
        durationMs: Math.round(performance.now() - startedAt),
        createdAt: now,
      },
      // The person's "go on once" is used by this call.
      ...(continuation && {
        finishedCall: { id: continuation.id, status: 'completed', output: { continued: true }, completedAt: now },
      }),
    };
    if (continuation) Object.assign(continuation, { status: 'completed' });
    const message = messageRow(run.threadId, run.messages.length, step.assistant, context.id);
    if (step.calls.length === 0) {
      await finish(context.id, 'completed', { result: { text: step.text }, message }, run, stepWrite);
      return 'done';
    }
    const calls = step.calls.map((call) => decideCall(run, call, now));
    const stored: ActionWrite = {
      ...stepWrite,
      actionId: context.id,
      messages: [message],
      toolCalls: calls.map((call, index) => toRow(call, context, now, run.calls.size + index)),
    };
    const staged = calls.filter((call) => call.status === 'staged');
    if (staged.length === 0) await store(run, stored);
    else await deps.effects.hold(run, stored, staged);
    run.messages.push(step.assistant);
    for (const call of calls) run.calls.set(call.toolCallId, call);
    return 'continue';
  };
}
