import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { messageRow, transition } from './action-writes.ts';
import { actionsRepo } from './actions.repo.ts';
import { decisionData } from './approvals.service.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { approvalDeadline, type Call, INTERRUPTED, type Message, type Run } from './run-context.ts';
import type { RunWriter } from './run-writer.ts';
import { toolCallsRepo } from './tool-calls.repo.ts';
import { runToolCall } from './tool-execution.ts';
import { endToolSpan, type RunTracing, startToolSpan } from './run-tracing.ts';

/** The part of a run after a model step that called tools: running them, or waiting for their approval. */
export function createToolStep(deps: {
  db: Kysely<DB>;
  clock: Clock;
  jobs: Pick<JobRunner, 'enqueue'>;
  store: RunWriter['store'];
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

  /**
   * Runs the calls of the last step that may run. Calls that needed approval may be decided while
   * the runner works, so then it looks at them again with the action locked against deciders: a
   * rejection or expiry ends the action, a staged call pauses it. When every call has its result the
   * conversation goes on.
   */
  return async function settleToolCalls(run: Run, toolCallIds: string[]): Promise<'continue' | 'stop'> {
    const { context } = run;
    const stepCalls = () => toolCallIds.map((id) => run.calls.get(id)!);
    const repeatable = (call: Call) => run.plans.get(call.toolName)?.definition.repeatable !== false;
    // Started by a run that died before its result was stored: the server may or may not have done it.
    const interrupted = stepCalls().filter((call) => call.status === 'ready' && call.interrupted && !repeatable(call));
    if (interrupted.length > 0) await stageInterrupted(run, interrupted);
    const decidable = stepCalls().some((call) => call.approval !== 'not_required');
    const toolMessage = (): Message => ({
      role: 'tool',
      content: stepCalls().map((call) => ({
        type: 'tool-result',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: call.output,
      })),
    });
    for (;;) {
      const ready = stepCalls().filter((candidate) => candidate.status === 'ready');
      for (const [index, call] of ready.entries()) {
        if (!repeatable(call) && !call.startedAt) {
          // Committed before the request leaves, so that a run resumed after a crash knows it may have happened
          // (a call that runs at once was recorded so with its step; an approved one is recorded here).
          call.startedAt = deps.clock.now();
          await store(run, { actionId: context.id, startedCall: { id: call.id, startedAt: call.startedAt } });
        }
        const span = startToolSpan(deps.tracing, run, call);
        try {
          Object.assign(
            call,
            await runToolCall(run.plans.get(call.toolName)?.definition, call, {
              orgId: context.orgId,
              actionId: context.id,
              userId: context.runAsUserId!,
              toolCallId: call.toolCallId,
              signal: run.signal,
            }),
          );
        } finally {
          endToolSpan(deps.tracing, span, call);
        }
        // Nothing can decide these calls meanwhile: the last result goes with the step's tool message.
        const closesStep = !decidable && index === ready.length - 1;
        await store(run, {
          actionId: context.id,
          finishedCall: { ...(call as { id: string; status: 'completed' | 'failed'; output: unknown }), completedAt: deps.clock.now() },
          messages: closesStep ? [messageRow(run.threadId, run.messages.length, toolMessage(), context.id)] : [],
        });
      }
      if (!decidable) {
        if (ready.length === 0)
          await store(run, { actionId: context.id, messages: [messageRow(run.threadId, run.messages.length, toolMessage(), context.id)] });
        run.messages.push(toolMessage());
        return 'continue';
      }
      // Callbacks written by a transition in the transaction below: announced once it commits.
      let callbacks = 0;
      const verdict = await db.transaction().execute(async (trx) => {
        await actionsRepo.lock(trx, context.id);
        const rows = (await toolCallsRepo.forAction(trx, context.id)).filter((row) => toolCallIds.includes(row.toolCallId));
        for (const row of rows)
          Object.assign(run.calls.get(row.toolCallId)!, { status: row.status, approval: row.approval, output: row.output ?? null });
        const current = stepCalls();
        const ended = rows.find((row) => row.status === 'rejected' || row.status === 'expired');
        if (ended) {
          await toolCallsRepo.cancelStaged(trx, context.id, deps.clock.now());
          ({ callbacks } = await transition(trx, {
            actionId: context.id,
            from: 'running',
            to: ended.status as 'rejected' | 'expired',
            cause: `${ended.toolName} ${ended.status}${ended.decisionReason ? `: ${ended.decisionReason}` : ''}`,
            data: decisionData(ended),
            changes: { leaseExpiresAt: null },
          }));
          return 'stop' as const;
        }
        if (current.some((call) => call.status === 'ready')) return 'again' as const;
        const staged = current.filter((call) => call.status === 'staged');
        if (staged.length > 0) {
          ({ callbacks } = await transition(trx, {
            actionId: context.id,
            from: 'running',
            to: 'pending_approval',
            cause: `${staged.map((call) => call.toolName).join(', ')} needs approval`,
            data: {
              toolCalls: staged.map((call) => ({
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                input: call.input,
                mode: call.mode,
                expiresAt: call.expiresAt,
              })),
            },
            changes: { leaseExpiresAt: null },
          }));
          // The approvers are told once this commits (the job reads who, and what is still waiting).
          if (context.notify?.includes('email')) await deps.jobs.enqueue('approvals.notify', { actionId: context.id }, { trx });
          return 'stop' as const;
        }
        const message = toolMessage();
        await store(run, { actionId: context.id, messages: [messageRow(run.threadId, run.messages.length, message, context.id)] }, trx);
        run.messages.push(message);
        return 'continue' as const;
      });
      if (callbacks > 0) deps.announce();
      if (verdict !== 'again') return verdict;
    }
  };
}
