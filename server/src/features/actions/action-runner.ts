import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB, ToolCallRow } from '../../db/schema.ts';
import type { Span } from '../../lib/tracing.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { actionsRepo } from './actions.repo.ts';
import { toolCallsRepo } from './tool-calls.repo.ts';
import { threadsRepo } from '../threads/threads.repo.ts';
import { ModelUnavailableError } from '../agents/model-provider.ts';
import { ModelCallError, modelTools } from './model-step.ts';
import { createModelTurn, type ModelTurnDeps } from './model-turn.ts';
import { type RunTracing, startRunSpans } from './run-tracing.ts';
import { messageRow } from './action-writes.ts';
import { createRunWriter, RunSuperseded } from './run-writer.ts';
import type { ToolRegistry } from '../agents/tool-registry.ts';
import { createToolStep } from './tool-step.ts';
import { ActionFailure, eventMessage, planTools, type Run, type RunContext } from './run-context.ts';
import type { Clock } from '../../lib/clock.ts';
import { storableText } from '../../lib/json-input.ts';

/**
 * Runs actions with their agent, one model step at a time. Each step and each tool result is stored
 * before the next step, so a run killed anywhere resumes from the database: the conversation says
 * where it was, and a tool call stored as finished is never run again. One runner holds an action at a
 * time (a lease it renews); another may take over only once the lease has lapsed. Every write is one
 * statement (action-writes.ts), group-committed with the writes of the other runs ready at the same
 * moment, except where a decision can race with the runner (staged calls): that transaction locks
 * the action. The conversation is opened with the first step (a model call before it has no effect).
 */
export function createActionRunner(
  deps: ModelTurnDeps & {
    db: Kysely<DB>;
    jobs: Pick<JobRunner, 'enqueue'>;
    /** Runnable actions were committed (or a lease given up): the run dispatchers of every process claim now. */
    wakeRunners: () => void;
    tools: ToolRegistry;
    limits: { maxSteps: number; leaseMs: number; modelTimeoutMs: number; modelMaxRetries: number };
    /** Write statements at once; the steps of runs that arrive meanwhile are written together. */
    writeConcurrency: number;
    /** Called once a transition has committed: its callbacks go out now. */
    announce: () => void;
    tracing: RunTracing;
    logger: Logger;
    clock: Clock;
  },
) {
  const { db } = deps;
  /** Aborted when the process stops: runs hand their action over at the next safe point. */
  const stopping = new AbortController();
  const { store, finish, drain } = createRunWriter({ db, writeConcurrency: deps.writeConcurrency, announce: deps.announce });
  const settleToolCalls = createToolStep({
    db,
    clock: deps.clock,
    jobs: deps.jobs,
    store,
    announce: deps.announce,
    tracing: deps.tracing,
  });
  const takeModelStep = createModelTurn({ ...deps, store, finish, stopping: stopping.signal });

  /** Sets a run up from its context; a new run starts its conversation, a resumed one reads it back. */
  async function begin(context: RunContext, signal: AbortSignal, span: Span, calls: ToolCallRow[] | null): Promise<Run> {
    const actionId = context.id;
    if (!context.agentId) throw new ActionFailure('The action has no agent: set one on its action rule or webhook');
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
    run.messages = (await threadsRepo.messages(db, run.threadId)).map(({ role, content }) => ({ role, content }));
    for (const row of calls ?? [])
      run.calls.set(row.toolCallId, {
        ...row,
        output: row.output ?? null,
        interrupted: row.status === 'ready' && row.startedAt !== null,
      });
    return run;
  }

  async function drive(run: Run): Promise<void> {
    const actionId = run.context.id;
    for (;;) {
      // Between steps everything done is stored: the place to hand over to another process.
      if (stopping.signal.aborted) throw new RunHandedOver();
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
        await finish(actionId, 'completed', { result: { text } }, run);
        return;
      }
      if ((await settleToolCalls(run, toolCallIds)) === 'stop') return;
    }
  }

  /** Gives up the lease, so that a worker of another process claims the action at once (woken now). */
  async function handOver(actionId: string): Promise<void> {
    await actionsRepo.releaseLease(db, actionId);
    deps.wakeRunners();
    deps.logger.info({ actionId }, 'the process is stopping: action handed over to another worker');
  }

  return {
    /**
     * The process is stopping: every run stops at its next safe point (a model call is abandoned,
     * a tool call finishes and is stored) and hands its action over.
     */
    stop(): void {
      stopping.abort();
    },

    /** Resolves once every step written so far is committed (shutdown waits for it before closing the database). */
    drain,

    /** What the runs of these claimed actions need, in one read (an action since deleted is missing). */
    async contexts(actionIds: string[]): Promise<Map<string, RunContext>> {
      const rows = actionIds.length === 0 ? [] : await actionsRepo.runContexts(db, actionIds, deps.defaultProvider);
      return new Map(rows.map((row) => [row.id, row]));
    },

    /**
     * Runs an action this process claimed (claimRunnable) until it completes, fails, or waits for a
     * human, renewing the lease meanwhile.
     */
    async runClaimed(context: RunContext): Promise<void> {
      const actionId = context.id;
      if (context.takeovers > MAX_TAKEOVERS) {
        await finish(actionId, 'failed', {
          error:
            `The action's run was cut short ${context.takeovers} times (its worker process died while running it each ` +
            `time); it is not run again`,
        });
        return;
      }
      const controller = new AbortController();
      const renew = setInterval(
        () => {
          actionsRepo
            .renewLease(db, actionId, deps.limits.leaseMs)
            .catch((error) => deps.logger.warn({ err: error, actionId }, 'could not renew an action lease'));
        },
        Math.max(100, deps.limits.leaseMs / 3),
      );
      renew.unref();
      let run: Run | undefined;
      let span: Span | undefined;
      try {
        // A resumed run reads its calls back (and the decisions it resumes after, for its trace).
        const calls = context.threadId ? await toolCallsRepo.forAction(db, actionId) : null;
        span = startRunSpans(deps.tracing, context, calls, deps.clock.now());
        run = await begin(context, controller.signal, span, calls);
        await drive(run);
      } catch (error) {
        if (span) deps.tracing.fail(span, error);
        if (isUniqueViolation(error) || error instanceof RunSuperseded) {
          deps.logger.warn({ actionId }, 'another runner continued this action; stopping');
          return;
        }
        if (stopping.signal.aborted) {
          // Whatever failed here may be the stop's own abort: the action is not failed but continued elsewhere.
          await handOver(actionId);
          return;
        }
        const known = error instanceof ActionFailure || error instanceof ModelCallError || error instanceof ModelUnavailableError;
        if (!known) deps.logger.error({ err: error, actionId }, 'action run failed unexpectedly');
        const message = known
          ? (error as Error).message
          : `Internal error while running the action: ${error instanceof Error ? error.message : String(error)}`;
        try {
          await finish(actionId, 'failed', { error: message }, run, unsettledCall(run, message, deps.clock.now()));
        } catch (failError) {
          // The database is unreachable: let the lease lapse so that the action resumes later.
          deps.logger.error({ err: failError, actionId }, 'could not record the failure of an action');
          throw error;
        }
      } finally {
        span?.end();
        clearInterval(renew);
        controller.abort();
      }
    },
  };
}

export type ActionRunner = ReturnType<typeof createActionRunner>;

/**
 * A call whose request may have left when the run failed is recorded as failed with words that say
 * it may have been done: never left as if it had not run (`ready`, no result).
 */
function unsettledCall(run: Run | undefined, failure: string, now: Date) {
  const call = run?.unsettled;
  if (!call) return undefined;
  const value = storableText(
    `The run failed after this call was sent, before its result was stored (${failure}); it may or may not have been done`,
  );
  return { finishedCall: { id: call.id, status: 'failed' as const, output: { type: 'error-text', value }, completedAt: now } };
}

/** Takeovers of an action's run (its runner died each time) after which it is failed, not run again. */
export const MAX_TAKEOVERS = 5;

/** Thrown between steps of a run whose process is stopping. */
class RunHandedOver extends Error {
  constructor() {
    super('the process is stopping');
  }
}
