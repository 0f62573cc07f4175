import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { messageRow, transition } from './action-writes.ts';
import { actionsRepo } from './actions.repo.ts';
import { decisionData, withReviewerNote } from './call-decision.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { approvalDeadline, type Call, callOf, INTERRUPTED, type Message, notifiesApprovers, type Run } from './run-context.ts';
import type { RunWriter } from './run-writer.ts';
import { toolCallsRepo } from './tool-calls.repo.ts';
import type { RunEffects } from './run-effects.ts';
import { endToolSpan, type RunTracing, startToolSpan } from './run-tracing.ts';
import { transaction } from '../../db/after-commit.ts';

/** The part of a run after a model step that called tools: running them, or waiting for their approval. */
export function createToolStep(deps: {
  db: Kysely<DB>;
  clock: Clock;
  jobs: Pick<JobRunner, 'enqueue'>;
  store: RunWriter['store'];
  /** Runs a call (a live run's tool, or an experiment's stand-in). */
  execute: RunEffects['execute'];
  /** Called once a transition has committed: its callbacks go out now. */
  announce: () => void;
  tracing: RunTracing;
}) {
  const { db, store } = deps;

  /** Interrupted calls wait for a human, who runs them again or lets the run go on with an error as their result. */
  async function stageInterrupted(run: Run, calls: Call[]): Promise<void> {
    const expiresAt = approvalDeadline(run.context, deps.clock.now());
    await db.transaction().execute(async (trx) => {
      for (const call of calls) {
        await toolCallsRepo.stage(trx, call.id, { reason: INTERRUPTED, expiresAt });
        await deps.jobs.enqueue('approvals.expire', { toolCallRowId: call.id }, { trx, startAfter: expiresAt });
        Object.assign(call, { status: 'staged', approval: 'pending', stagedReason: INTERRUPTED, expiresAt });
      }
    });
  }

  /** The calls of one model step, in its order, and the tool message that carries their results. */
  function stepOf(run: Run, toolCallIds: string[]) {
    const calls = () => toolCallIds.map((id) => run.calls.get(id)!);
    const toolMessage = (): Message => ({
      role: 'tool',
      content: calls().map((call) => ({
        type: 'tool-result',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: call.output,
      })),
    });
    return {
      toolCallIds,
      calls,
      /** The tool message as the next row of the conversation. */
      messageRow: () => messageRow(run.threadId, run.messages.length, toolMessage(), run.context.id),
      /** The conversation goes on: the tool message is the run's (stored already). */
      close: () => run.messages.push(toolMessage()),
    };
  }
  type Step = ReturnType<typeof stepOf>;

  const repeatable = (run: Run, call: Call) => run.plans.get(call.toolName)?.definition.repeatable !== false;

  /** Runs one call that may run; one that may not be repeated is recorded as started (committed) before its request leaves. */
  async function runCall(run: Run, call: Call): Promise<void> {
    const { context } = run;
    if (!repeatable(run, call) && !call.startedAt) {
      // So that a run resumed after a crash knows it may have happened (a call that runs at once was
      // recorded so with its step; an approved one is recorded here).
      call.startedAt = deps.clock.now();
      await store(run, { actionId: context.id, startedCall: { id: call.id, startedAt: call.startedAt } });
    }
    // From here its request may leave: a run that fails before its result is stored says it may have been done.
    run.unsettled = call;
    const span = startToolSpan(deps.tracing, run, call);
    try {
      const toolContext = {
        orgId: context.orgId,
        actionId: context.id,
        userId: context.runAsUserId!,
        toolCallId: call.toolCallId,
        signal: run.signal,
      };
      const outcome = await deps.execute(run, call, toolContext);
      Object.assign(call, call.edited ? { ...outcome, output: withReviewerNote(outcome.output, call.input) } : outcome);
    } finally {
      endToolSpan(deps.tracing, span, call);
    }
  }

  /**
   * Runs the step's calls that are ready and stores each result. When nothing can decide the step's
   * calls meanwhile (none needs approval), the last result goes with the step's tool message.
   */
  async function runReady(run: Run, step: Step, decidable: boolean): Promise<void> {
    const ready = step.calls().filter((call) => call.status === 'ready');
    for (const [index, call] of ready.entries()) {
      await runCall(run, call);
      const closesStep = !decidable && index === ready.length - 1;
      await store(run, {
        actionId: run.context.id,
        finishedCall: {
          ...(call as { id: string; status: 'completed' | 'failed'; output: unknown }),
          completedAt: deps.clock.now(),
        },
        messages: closesStep ? [step.messageRow()] : [],
      });
      run.unsettled = undefined;
    }
    if (!decidable && ready.length === 0) await store(run, { actionId: run.context.id, messages: [step.messageRow()] });
  }

  /**
   * With the action locked against deciders: a rejected or expired call ends the action, a call made
   * ready meanwhile (approved) runs next, a staged one pauses the action; else the step is done and
   * the conversation goes on. Returns how many callbacks the transition wrote.
   */
  async function decideStep(
    trx: Kysely<DB>,
    run: Run,
    step: Step,
  ): Promise<{ verdict: 'continue' | 'stop' | 'again'; callbacks: number }> {
    const { context } = run;
    await actionsRepo.lock(trx, context.orgId, context.id);
    const rows = (await toolCallsRepo.forAction(trx, context.id)).filter((row) => step.toolCallIds.includes(row.toolCallId));
    for (const row of rows) {
      const { status, approval, output, input, edited } = callOf(row);
      Object.assign(run.calls.get(row.toolCallId)!, { status, approval, output, input, edited });
    }
    const current = step.calls();
    const ended = rows.find((row) => row.status === 'rejected' || row.status === 'expired');
    if (ended) {
      await toolCallsRepo.cancelStaged(trx, context.id, deps.clock.now());
      const { callbacks } = await transition(trx, {
        actionId: context.id,
        from: 'running',
        to: ended.status as 'rejected' | 'expired',
        cause: `${ended.toolName} ${ended.status}${ended.decisionReason ? `: ${ended.decisionReason}` : ''}`,
        data: decisionData(ended),
        changes: { leaseExpiresAt: null },
      });
      return { verdict: 'stop', callbacks };
    }
    if (current.some((call) => call.status === 'ready')) return { verdict: 'again', callbacks: 0 };
    const staged = current.filter((call) => call.status === 'staged');
    if (staged.length > 0) return { verdict: 'stop', callbacks: await pause(trx, run, staged) };
    await store(run, { actionId: context.id, messages: [step.messageRow()] }, trx);
    step.close();
    return { verdict: 'continue', callbacks: 0 };
  }

  /**
   * The action waits for its staged calls; their approvers are told once this commits (the job reads who, and what
   * still waits).
   */
  async function pause(trx: Kysely<DB>, run: Run, staged: Call[]): Promise<number> {
    const { context } = run;
    const { callbacks } = await transition(trx, {
      actionId: context.id,
      from: 'running',
      to: 'pending_approval',
      cause: `${staged.map((call) => call.toolName).join(', ')} needs approval`,
      data: {
        toolCalls: staged.map(({ toolCallId, toolName, input, mode, expiresAt }) => ({
          toolCallId,
          toolName,
          input,
          mode,
          expiresAt,
        })),
      },
      changes: { leaseExpiresAt: null },
    });
    if (notifiesApprovers(run)) await deps.jobs.enqueue('approvals.notify', { actionId: context.id }, { trx });
    return callbacks;
  }

  /**
   * Runs the calls of the last step that may run. Calls that needed approval may be decided while
   * the runner works, so then it looks at them again with the action locked (decideStep). When
   * every call has its result the conversation goes on.
   */
  return async function settleToolCalls(run: Run, toolCallIds: string[]): Promise<'continue' | 'stop'> {
    const step = stepOf(run, toolCallIds);
    // Started by a run that died before its result was stored: the server may or may not have done it.
    const interrupted = step.calls().filter((call) => call.status === 'ready' && call.interrupted && !repeatable(run, call));
    if (interrupted.length > 0) await stageInterrupted(run, interrupted);
    const decidable = step.calls().some((call) => call.approval !== 'not_required');
    for (;;) {
      await runReady(run, step, decidable);
      if (!decidable) {
        step.close();
        return 'continue';
      }
      const { verdict, callbacks } = await transaction(db, (trx) => decideStep(trx, run, step));
      if (callbacks > 0) deps.announce();
      if (verdict !== 'again') return verdict;
    }
  };
}
