import { isDeepStrictEqual } from 'node:util';
import type { Kysely } from 'kysely';
import type { DB, ToolCallRow } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { ActionWrite, ActionWriteResult } from '../actions/action-writes.ts';
import { actionsRepo } from '../actions/actions.repo.ts';
import type { ModelTurnDeps } from '../actions/model-turn.ts';
import type { Run } from '../actions/run-context.ts';
import type { RunEffects, ToolOutcome } from '../actions/run-effects.ts';
import { createRunLoop } from '../actions/run-loop.ts';
import { agentAttributes } from '../actions/run-tracing.ts';
import { runToolCall } from '../actions/tool-execution.ts';
import type { ToolRegistry } from '../agents/tool-registry.ts';
import { type ReplayedAs, type RunRecord, whyWaits } from './experiment-record.ts';
import type { ClaimedResult } from './experiments.repo.ts';
import { experimentsRepo } from './experiments.repo.ts';

/** What the model is told of a call that an experiment did not run. */
export const NOT_EXECUTED =
  'Not executed: this is an experiment replaying a past action, and the original run made no call of this tool ' +
  'with these arguments, so there is no recorded result. Nothing was done.';

/** A budget refused a replay's model call: the experiment stops with this reason. */
export class ExperimentBudgetReached extends Error {}

/** A replay writes nothing a live run writes: no step, no job, no transition, no callback. */
const NO_JOBS: Pick<JobRunner, 'enqueue'> = {
  enqueue: () => Promise.reject(new Error('an experiment enqueues no job')),
};
const NOTHING_WRITTEN: ActionWriteResult = { moved: true, callbacks: 0, linked: true };

/** A call the original run made and that ran (its result is what a replayed call of the same tool and arguments gets). */
const ran = (call: ToolCallRow) => (call.status === 'completed' || call.status === 'failed') && call.output !== null;

/**
 * A replay's effects: it keeps the run to itself (only its model calls are stored, as the real spend
 * they are, marked with the experiment), and runs no tool: a read-only MCP tool runs for real when
 * the experiment allows it, a call of the same tool with the same arguments as one of the original
 * run gets that call's recorded result, and any other call gets NOT_EXECUTED. A call that would
 * wait for a person is noted, and goes on as if approved; a budget that refuses a call stops it.
 */
function replayEffects(deps: { db: Kysely<DB>; claim: ClaimedResult; recorded: ToolCallRow[] }) {
  const { db, claim } = deps;
  const unused = deps.recorded.filter(ran);
  const waits = new Map<string, string>();
  const replayedAs = new Map<string, ReplayedAs>();
  const usage = { calls: 0, inputTokens: 0, outputTokens: 0, costUsd: null as number | null };
  let ending: { status: string; text: string | null; error: string | null } | undefined;

  async function keep(write: Pick<ActionWrite, 'modelCall'>): Promise<void> {
    const call = write.modelCall;
    if (!call) return;
    await experimentsRepo.insertModelCall(db, { ...call, actionId: null, experimentId: claim.experimentId });
    usage.calls += 1;
    usage.inputTokens += call.inputTokens;
    usage.outputTokens += call.outputTokens;
    if (call.costUsd !== null && call.costUsd !== undefined) usage.costUsd = (usage.costUsd ?? 0) + call.costUsd;
  }
  const store: RunEffects['store'] = async (run, write) => {
    if (run) run.opening = undefined;
    await keep(write);
    return NOTHING_WRITTEN;
  };

  const effects: RunEffects = {
    store,
    async finish(_actionId, to, outcome, _run, step) {
      if (step) await keep(step);
      const text = (outcome.result as { text?: unknown } | undefined)?.text;
      ending = { status: to, text: typeof text === 'string' ? text : null, error: outcome.error ?? null };
    },
    async hold(run, step, staged) {
      for (const call of staged) {
        waits.set(call.toolCallId, whyWaits(call));
        Object.assign(call, { status: 'ready', approval: 'not_required', expiresAt: null });
      }
      await store(run, step);
    },
    overBudget: (_run, refusal) => Promise.reject(new ExperimentBudgetReached(refusal.reason)),
    async execute(run, call, context): Promise<ToolOutcome> {
      // Asked for: a read-only tool answers now, rather than with what it answered then.
      const definition = run.plans.get(call.toolName)?.definition;
      if (claim.liveReadOnlyTools && definition?.server?.annotations.readOnlyHint === true) {
        replayedAs.set(call.toolCallId, 'live');
        return runToolCall(definition, call, context);
      }
      const index = unused.findIndex(
        (original) => original.toolName === call.toolName && isDeepStrictEqual(original.input, call.input),
      );
      if (index !== -1) {
        const [original] = unused.splice(index, 1) as [ToolCallRow];
        replayedAs.set(call.toolCallId, 'recorded');
        return { status: original.status as ToolOutcome['status'], output: original.output };
      }
      replayedAs.set(call.toolCallId, 'not_executed');
      return { status: 'failed', output: { type: 'error-text', value: NOT_EXECUTED } };
    },
  };

  /** What the replay did, in the shape of the baseline. */
  function record(run: Run | undefined, failure: string | null): RunRecord {
    const calls = [...(run?.calls.values() ?? [])];
    return {
      status: failure ? 'failed' : (ending?.status ?? 'failed'),
      toolCalls: calls.map((call) => ({
        toolName: call.toolName,
        arguments: call.input ?? null,
        mode: call.mode,
        approval: waits.get(call.toolCallId) ?? null,
        replayed:
          replayedAs.get(call.toolCallId) ??
          (call.status === 'denied' ? 'denied' : call.modeSource === null ? 'no_such_tool' : 'not_executed'),
      })),
      approvalsNeeded: waits.size,
      finalText: failure ? null : (ending?.text ?? null),
      error: failure ?? ending?.error ?? null,
      steps: usage.calls,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: usage.costUsd,
    };
  }
  return { effects, record };
}

/**
 * Replays past actions with a candidate version of their agent, on the production run loop
 * (actions/run-loop.ts: the same model step, approval policy, argument rules and tool step) with the
 * replay's effects: the same input the original had (its event, instructions and data, or its email).
 */
export function createReplayer(deps: ModelTurnDeps & { db: Kysely<DB>; tools: Pick<ToolRegistry, 'forOrg'> }) {
  return async function replay(claim: ClaimedResult, recorded: ToolCallRow[], signal: AbortSignal): Promise<RunRecord> {
    const [context] = await actionsRepo.runContexts(deps.db, [claim.actionId], deps.defaultProvider, claim.version);
    const { effects, record } = replayEffects({ db: deps.db, claim, recorded });
    if (!context) return record(undefined, 'The action no longer exists');
    const loop = createRunLoop({ ...deps, jobs: NO_JOBS, effects, stopping: signal, announce: () => {} });
    const span = deps.tracing.start('experiment.replay', null, {
      attributes: {
        'agent_platform.experiment.id': claim.experimentId,
        'agent_platform.action.id': claim.actionId,
        ...agentAttributes(context),
        'agent_platform.agent.version': claim.version,
      },
    });
    let run: Run | undefined;
    try {
      // A new conversation on the original's input: nothing of the original run's is carried over.
      run = await loop.begin({ ...context, threadId: null }, signal, span, null);
      await loop.drive(run);
      return record(run, null);
    } catch (error) {
      if (error instanceof ExperimentBudgetReached || signal.aborted) throw error;
      deps.tracing.fail(span, error);
      return record(run, error instanceof Error ? error.message : String(error));
    } finally {
      span.end();
    }
  };
}

export type Replayer = ReturnType<typeof createReplayer>;
