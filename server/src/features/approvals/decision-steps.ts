import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { DB, DecisionChannel, ToolCallRow } from '../../db/schema.ts';
import { transition } from '../actions/action-writes.ts';
import { decisionData } from '../actions/call-decision.ts';
import { INTERRUPTED } from '../actions/run-context.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import { approvalsRepo } from './approvals.repo.ts';
import type { DecisionRule } from './approvers.repo.ts';

/** The four kinds of decision: a person's three, and the deadline's. */
export type Decision =
  | { kind: 'approve'; arguments?: Record<string, unknown>; reason?: string | null }
  | { kind: 'reject'; reason: string | null }
  /** Not run: the model gets the person's message as the call's result, and goes on. */
  | { kind: 'send_back'; reason: string }
  | { kind: 'expire' };

/** The result the model sees of a call a person sent back. */
const sentBack = (message: string) =>
  JSON.stringify({ type: 'error-text', value: `A reviewer sent this call back without running it: ${message}` });

/** What the model is told of an interrupted call that a human chose not to run again. */
const notRunAgain = (reason: string | null) =>
  JSON.stringify({
    type: 'error-text',
    value:
      'The call was interrupted before its result came back (the server may or may not have done it); ' +
      `a person chose not to run it again${reason ? `: ${reason}` : ''}.`,
  });

/**
 * What a decision makes of the call: it runs (approved, with `approvedInput` when a person's arguments differ from the
 * model's), or it gets its end.
 */
export function callChanges(call: ToolCallRow, decision: Decision, approvedInput: string | null | undefined) {
  // An interrupted call, rejected, is not run again: the run goes on with an error as its result.
  const interrupted = call.stagedReason === INTERRUPTED;
  switch (decision.kind) {
    case 'approve':
      return { status: 'ready' as const, approval: 'approved' as const, startedAt: null, approvedInput };
    case 'send_back':
      return { status: 'sent_back' as const, approval: 'sent_back' as const, output: sentBack(decision.reason) };
    case 'reject':
      return interrupted
        ? { status: 'failed' as const, approval: 'rejected' as const, output: notRunAgain(decision.reason) }
        : { status: 'rejected' as const, approval: 'rejected' as const };
    case 'expire':
      return { status: 'expired' as const, approval: 'expired' as const };
  }
}

/** One approval, counted: whether the call has all it needs now, and what its arguments are (undefined: unchanged). */
export interface ApprovalCount {
  /** The approver had approved these arguments already: nothing changed. */
  counted: boolean;
  complete: boolean;
  approvedInput: string | null | undefined;
}

/**
 * Records one approval of a staged call and counts the approvals that stand: distinct approvers, of the same arguments.
 * An approver whose edit changes the arguments restarts the count on them (the earlier approvals were of others).
 */
export async function countApproval(
  trx: Kysely<DB>,
  call: ToolCallRow,
  approval: { userId: string | null; channel: DecisionChannel; externalId: string | null; reason: string | null; at: Date },
  edited: Record<string, unknown> | undefined,
  rule: DecisionRule,
): Promise<ApprovalCount> {
  const pending = call.approvedInput ?? call.input;
  const changes = edited !== undefined && !isDeepStrictEqual(edited, pending);
  // The model's own arguments again are no edit: approvedInput goes back to null.
  const approvedInput = changes ? (isDeepStrictEqual(edited, call.input) ? null : JSON.stringify(edited)) : undefined;
  if (changes) {
    await approvalsRepo.supersede(trx, call.id, approval.at);
    await approvalsRepo.setPendingArguments(trx, call.id, approvedInput!);
  }
  const standing = changes ? [] : await approvalsRepo.currentApprovals(trx, call.id);
  if (approval.userId && standing.some((row) => row.userId === approval.userId))
    return { counted: true, complete: false, approvedInput: undefined };
  const args = changes ? approvedInput : call.approvedInput == null ? null : JSON.stringify(call.approvedInput);
  await approvalsRepo.insertApproval(trx, {
    id: randomUUID(),
    orgId: call.orgId,
    toolCallId: call.id,
    userId: approval.userId,
    channel: approval.channel,
    externalUserId: approval.externalId,
    arguments: args ?? null,
    reason: approval.reason,
    createdAt: approval.at,
  });
  return { counted: false, complete: standing.length + 1 >= rule.minApprovals, approvedInput };
}

/**
 * The action after a decision on one of its calls: it goes on once none waits (approved, sent back,
 * an interrupted call not run again), or it ends (rejected, expired) and its other calls are cancelled.
 */
export async function moveAction(trx: Kysely<DB>, decided: ToolCallRow, decision: Decision, now: Date) {
  const { actionId, toolName } = decided;
  const data = decisionData(decided);
  const interrupted = decided.stagedReason === INTERRUPTED;
  if (decision.kind === 'approve' || decision.kind === 'send_back' || (decision.kind === 'reject' && interrupted)) {
    const waiting = (await toolCallsRepo.forAction(trx, actionId)).some((row) => row.status === 'staged');
    if (waiting) return { resumed: false, callbacks: 0 };
    const cause =
      decision.kind === 'approve'
        ? `${toolName} approved`
        : decision.kind === 'send_back'
          ? `${toolName} sent back: ${decision.reason}`
          : `${toolName} not run again; the run goes on`;
    const { callbacks } = await transition(trx, { actionId, from: 'pending_approval', to: 'approved', cause, data });
    return { resumed: true, callbacks };
  }
  await toolCallsRepo.cancelStaged(trx, actionId, now);
  const to = decision.kind === 'reject' ? 'rejected' : 'expired';
  const cause = `${toolName} ${to}${decided.decisionReason ? `: ${decided.decisionReason}` : ''}`;
  const { callbacks } = await transition(trx, { actionId, from: 'pending_approval', to, cause, data });
  return { resumed: false, callbacks };
}
