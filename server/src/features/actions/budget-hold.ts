import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Clock } from '../../lib/clock.ts';
import type { TokenUsage } from '../../lib/model-prices.ts';
import type { RunWriter } from './run-writer.ts';
import { approvalDeadline, notifiesApprovers, type Call, type Run, toRow } from './run-context.ts';
import { transaction } from '../../db/after-commit.ts';

/**
 * The approval a run over its budget waits for, named like a tool so that every approval channel
 * (the inbox, the console, email links and replies, the deadline) decides it: approved, the run
 * makes its next model call over the budget once; rejected or expired, the action ends so.
 */
export const BUDGET_APPROVAL = 'continueOverBudget';

/** The run's approved continuation over its budget, not used yet. */
export const continuationOf = (run: Run): Call | undefined =>
  [...run.calls.values()].find((call) => call.toolName === BUDGET_APPROVAL && call.status === 'ready');

/** A model call's prompt in tokens, roughly (four characters a token): what a budget reserves before it. */
export const expectedUsage = (instructions: string, run: Run): TokenUsage => ({
  inputTokens: Math.ceil((instructions.length + JSON.stringify(run.messages).length) / 4),
  outputTokens: 0,
  cachedInputTokens: 0,
});

/**
 * Pauses the run before its model call: the action waits as pending_approval for a decision on a
 * staged continueOverBudget call whose reason says which budget, with the deadline of the rule's
 * approvals. Stored with the conversation so far (a run paused before its first step opens it).
 */
export async function pauseForBudget(
  deps: {
    db: Kysely<DB>;
    clock: Clock;
    jobs: Pick<JobRunner, 'enqueue'>;
    store: RunWriter['store'];
    announce: () => void;
  },
  run: Run,
  refusal: { reason: string; details: Record<string, unknown> },
): Promise<void> {
  const { context } = run;
  const now = deps.clock.now();
  const call: Call = {
    id: randomUUID(),
    toolCallId: `budget_${randomUUID().replaceAll('-', '')}`,
    toolName: BUDGET_APPROVAL,
    input: refusal.details,
    mode: 'ask',
    modeSource: { source: 'budget' },
    status: 'staged',
    approval: 'pending',
    output: null,
    expiresAt: approvalDeadline(context, now),
    startedAt: null,
    stagedReason: refusal.reason,
  };
  const { callbacks } = await transaction(deps.db, async (trx) => {
    const written = await deps.store(
      run,
      {
        actionId: context.id,
        toolCalls: [toRow(call, context, now, run.calls.size)],
        transition: {
          actionId: context.id,
          from: 'running',
          to: 'pending_approval',
          cause: refusal.reason,
          data: {
            reason: 'budget exceeded',
            budget: refusal.details,
            toolCalls: [
              {
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                input: call.input,
                mode: call.mode,
                expiresAt: call.expiresAt,
              },
            ],
          },
          changes: { leaseExpiresAt: null },
        },
      },
      trx,
    );
    await deps.jobs.enqueue('approvals.expire', { toolCallRowId: call.id }, { trx, startAfter: call.expiresAt! });
    if (notifiesApprovers(run)) await deps.jobs.enqueue('approvals.notify', { actionId: context.id }, { trx });
    return written;
  });
  run.calls.set(call.toolCallId, call);
  if (callbacks > 0) deps.announce();
}
