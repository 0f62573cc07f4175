import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB, ToolCallRow } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Span } from '../../lib/tracing.ts';
import type { ToolRegistry } from '../agents/tool-registry.ts';
import { threadsRepo } from '../threads/threads.repo.ts';
import { messageRow } from './action-writes.ts';
import { modelTools } from './model-step.ts';
import { createModelTurn, type ModelTurnDeps } from './model-turn.ts';
import { ActionFailure, callOf, eventMessage, planTools, type Run, type RunContext } from './run-context.ts';
import type { RunEffects } from './run-effects.ts';
import { createToolStep } from './tool-step.ts';

/**
 * The one loop that runs an agent on an action, one model step at a time: the model's turn (budget,
 * model call, each proposed call's mode under the approval policy and argument rules), then its tool
 * calls, until the agent answers, waits for a person, or fails. What it does beyond the model is its
 * `effects`: a live run's, or an experiment's replay.
 */
export function createRunLoop(
  deps: ModelTurnDeps & {
    db: Kysely<DB>;
    jobs: Pick<JobRunner, 'enqueue'>;
    tools: Pick<ToolRegistry, 'forOrg'>;
    effects: RunEffects;
    /** Aborted when the process stops: a run hands its action over at the next safe point. */
    stopping: AbortSignal;
    announce: () => void;
  },
) {
  const { effects } = deps;
  const settleToolCalls = createToolStep({
    db: deps.db,
    clock: deps.clock,
    jobs: deps.jobs,
    store: effects.store,
    execute: effects.execute,
    announce: deps.announce,
    tracing: deps.tracing,
  });
  const takeModelStep = createModelTurn({ ...deps, effects, stopping: deps.stopping });

  return {
    /** Sets a run up from its context; a new run starts its conversation, a resumed one reads it back. */
    async begin(context: RunContext, signal: AbortSignal, span: Span, calls: ToolCallRow[] | null): Promise<Run> {
      const actionId = context.id;
      if (!context.agentId)
        throw new ActionFailure(
          context.createdWithAgentId
            ? `The action's agent (${context.createdWithAgentId}) was deleted after the action was created`
            : 'The action has no agent: set one on its action rule or webhook',
        );
      if (!context.runAsUserId) throw new ActionFailure('The run-as user of the action no longer exists');
      const plans = planTools(await deps.tools.forOrg(context.orgId), context);
      const run: Run = {
        context,
        plans,
        tools: modelTools(plans),
        threadId: context.threadId ?? randomUUID(),
        messages: [],
        calls: new Map(),
        signal,
        span,
      };
      if (!context.threadId) {
        const first = eventMessage(context);
        const title = `${context.eventType}${context.externalId ? ` (${context.externalId})` : ''}`.slice(0, 200);
        run.opening = {
          thread: { id: run.threadId, orgId: context.orgId, userId: context.runAsUserId, title, actionId },
          message: messageRow(run.threadId, 0, first, actionId),
        };
        run.messages.push(first);
        return run;
      }
      run.messages = (await threadsRepo.messages(deps.db, run.threadId)).map(({ role, content }) => ({ role, content }));
      for (const row of calls ?? []) run.calls.set(row.toolCallId, callOf(row));
      return run;
    },

    /** Runs until the agent answers (the action completes), a call waits for a person, or the run stops. */
    async drive(run: Run): Promise<void> {
      const actionId = run.context.id;
      for (;;) {
        // Between steps everything done is stored: the place to hand over to another process.
        if (deps.stopping.aborted) throw new RunHandedOver();
        const last = run.messages.at(-1)!;
        if (last.role !== 'assistant') {
          if ((await takeModelStep(run)) !== 'continue') return;
          continue;
        }
        const parts = last.content as Array<{ type: string; toolCallId?: string; text?: string }>;
        const toolCallIds = parts.filter((part) => part.type === 'tool-call').map((part) => part.toolCallId!);
        if (toolCallIds.length === 0) {
          const text = parts
            .filter((part) => part.type === 'text')
            .map((part) => part.text)
            .join('');
          await effects.finish(actionId, 'completed', { result: { text } }, run);
          return;
        }
        if ((await settleToolCalls(run, toolCallIds)) === 'stop') return;
      }
    },
  };
}

/** Thrown between steps of a run whose process is stopping. */
export class RunHandedOver extends Error {
  constructor() {
    super('the process is stopping');
  }
}
