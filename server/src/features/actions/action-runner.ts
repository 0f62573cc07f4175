import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB, ModelProvider } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { actionsRepo } from './actions.repo.ts';
import { toolCallsRepo } from './tool-calls.repo.ts';
import { threadsRepo } from '../threads/threads.repo.ts';
import { ModelUnavailableError, type ModelResolver } from '../agents/model-provider.ts';
import { callModel, ModelCallError, type ModelStep, modelTools } from './model-step.ts';
import type { ModelMeter } from '../usage/model-meter.ts';
import { continuationOf, expectedUsage, pauseForBudget } from './budget-hold.ts';
import { messageRow, type ActionWrite } from './action-writes.ts';
import { createRunWriter, RunSuperseded } from './run-writer.ts';
import type { ToolRegistry } from '../agents/tool-registry.ts';
import { createToolStep } from './tool-step.ts';
import { ActionFailure, decideCall, eventMessage, instructionsOf, planTools, type Run, type RunContext, toRow } from './run-context.ts';
import type { Clock } from '../../lib/clock.ts';

/**
 * Runs actions with their agent, one model step at a time. Each step and each tool result is stored
 * before the next step, so a run killed anywhere resumes from the database: the conversation says
 * where it was, and a tool call stored as finished is never run again. One runner holds an action at a
 * time (a lease it renews); another may take over only once the lease has lapsed. Every write is one
 * statement (action-writes.ts), group-committed with the writes of the other runs ready at the same
 * moment, except where a decision can race with the runner (staged calls): that transaction locks
 * the action. The conversation is opened with the first step (a model call before it has no effect).
 */
export function createActionRunner(deps: {
  db: Kysely<DB>;
  jobs: Pick<JobRunner, 'enqueue'>;
  /** Runnable actions were committed (or a lease given up): the run dispatchers of every process claim now. */
  wakeRunners: () => void;
  tools: ToolRegistry;
  resolveModel: ModelResolver;
  defaultProvider: ModelProvider;
  limits: { maxSteps: number; leaseMs: number; modelTimeoutMs: number; modelMaxRetries: number };
  /** Write statements at once; the steps of runs that arrive meanwhile are written together. */
  writeConcurrency: number;
  /** Called once a transition has committed: its callbacks go out now. */
  announce: () => void;
  /** Budgets and the run-as user's limits, checked before each model call; what each call used and cost. */
  meter: ModelMeter;
  logger: Logger;
  clock: Clock;
}) {
  const { db } = deps;
  /** Aborted when the process stops: runs hand their action over at the next safe point. */
  const stopping = new AbortController();
  const { store, finish, drain } = createRunWriter({ db, writeConcurrency: deps.writeConcurrency, announce: deps.announce });
  const settleToolCalls = createToolStep({ db, clock: deps.clock, jobs: deps.jobs, store, announce: deps.announce });

  /** Sets a run up from its context; a new run starts its conversation, a resumed one reads it back. */
  async function begin(context: RunContext, signal: AbortSignal): Promise<Run> {
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
    for (const row of await toolCallsRepo.forAction(db, actionId))
      run.calls.set(row.toolCallId, { ...row, output: row.output ?? null, interrupted: row.status === 'ready' && row.startedAt !== null });
    return run;
  }

  /**
   * One model step, stored with its model call; an answer without tool calls completes the action in
   * the same statement. Budgets and the run-as user's limits are checked first: over a budget, the
   * action pauses for a person or fails, as the budget says.
   */
  async function takeModelStep(run: Run): Promise<'done' | 'continue' | 'paused'> {
    const { context } = run;
    const steps = run.messages.filter((message) => message.role === 'assistant').length;
    if (steps >= deps.limits.maxSteps) throw new ActionFailure(`The action reached its limit of ${deps.limits.maxSteps} model steps`);
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
      if (admission.onExceed === 'fail') throw new ActionFailure(admission.reason);
      await pauseForBudget({ db, clock: deps.clock, jobs: deps.jobs, store, announce: deps.announce }, run, admission);
      return 'paused';
    }
    const { ticket } = admission;
    const startedAt = performance.now();
    let step: ModelStep;
    try {
      step = await callModel({
        model,
        instructions,
        tools: run.tools,
        timeoutMs: deps.limits.modelTimeoutMs,
        maxRetries: deps.limits.modelMaxRetries,
        // A model call has no side effect: a stopping process abandons it (tool calls it lets finish).
        signal: AbortSignal.any([run.signal, stopping.signal]),
        messages: run.messages as ModelMessage[],
      });
    } catch (error) {
      await deps.meter.settle(ticket, null);
      throw error;
    }
    const now = deps.clock.now();
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
        costUsd: await deps.meter.settle(ticket, step.usage),
        durationMs: Math.round(performance.now() - startedAt),
        createdAt: now,
      },
      // The person's "go on once" is used by this call.
      ...(continuation && { finishedCall: { id: continuation.id, status: 'completed', output: { continued: true }, completedAt: now } }),
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
      toolCalls: calls.map((call) => toRow(call, context, now)),
    };
    const staged = calls.filter((call) => call.status === 'staged');
    if (staged.length === 0) await store(run, stored);
    else {
      await db.transaction().execute(async (trx) => {
        await store(run, stored, trx);
        for (const call of staged)
          await deps.jobs.enqueue('approvals.expire', { toolCallRowId: call.id }, { trx, startAfter: call.expiresAt! });
      });
    }
    run.messages.push(step.assistant);
    for (const call of calls) run.calls.set(call.toolCallId, call);
    return 'continue';
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
          error: `The action's run was cut short ${context.takeovers} times (its worker process died while running it each time); it is not run again`,
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
      try {
        run = await begin(context, controller.signal);
        await drive(run);
      } catch (error) {
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
          await finish(actionId, 'failed', { error: message }, run);
        } catch (failError) {
          // The database is unreachable: let the lease lapse so that the action resumes later.
          deps.logger.error({ err: failError, actionId }, 'could not record the failure of an action');
          throw error;
        }
      } finally {
        clearInterval(renew);
        controller.abort();
      }
    },
  };
}

export type ActionRunner = ReturnType<typeof createActionRunner>;

/** Takeovers of an action's run (its runner died each time) after which it is failed, not run again. */
export const MAX_TAKEOVERS = 5;

/** Thrown between steps of a run whose process is stopping. */
class RunHandedOver extends Error {
  constructor() {
    super('the process is stopping');
  }
}
