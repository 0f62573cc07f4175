import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { DB, DecisionChannel, ToolCallApproval, ToolCallRow, UserRole } from '../../db/schema.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { decodeCursor, encodeCursor } from '../../lib/pagination.ts';
import { actionsRepo } from './actions.repo.ts';
import { transition } from './action-writes.ts';
import { toolCallsRepo } from './tool-calls.repo.ts';
import { argumentRulesOf, mayDecide } from './approvers.repo.ts';
import { checkEditedArguments } from './edited-arguments.ts';
import type { ToolRegistry } from '../agents/tool-registry.ts';
import { INTERRUPTED } from './run-context.ts';
import { BUDGET_APPROVAL } from './budget-hold.ts';
import type { Clock } from '../../lib/clock.ts';

/** The longest reason a decision keeps, whichever channel it comes by. */
export const MAX_DECISION_REASON_CHARS = 2000;

export type Decision =
  | { kind: 'approve'; arguments?: Record<string, unknown>; reason?: string | null }
  | { kind: 'reject'; reason: string | null }
  /** Not run: the model gets the person's message as the call's result, and goes on. */
  | { kind: 'send_back'; reason: string }
  | { kind: 'expire' };

/** What a decision did, as callbacks and the ledger name it (from the call's approval). */
const DECISION_KINDS: Partial<Record<ToolCallApproval, string>> = {
  approved: 'approve',
  rejected: 'reject',
  expired: 'expire',
  sent_back: 'send_back',
};

/** The result the model sees of a call a person sent back. */
const sentBack = (message: string) =>
  JSON.stringify({ type: 'error-text', value: `A reviewer sent this call back without running it: ${message}` });
/**
 * What a channel checks with the action locked, once the call is found waiting (a link is used
 * once, before its deadline). Its refusal refuses the decision and is recorded as an attempt.
 */
export type DecisionGuard = (trx: Kysely<DB>) => Promise<string | undefined>;

/** Why a person the rule does not name decides nothing (recorded as their attempt). */
export const NOT_AN_APPROVER =
  "Not one of this call's approvers: its action rule names who may decide (by default, the org's admins)";

/** What the model is told of an interrupted call that a human chose not to run again. */
const notRunAgain = (reason: string | null) =>
  JSON.stringify({
    type: 'error-text',
    value:
      'The call was interrupted before its result came back (the server may or may not have done it); ' +
      `a person chose not to run it again${reason ? `: ${reason}` : ''}.`,
  });

/** Who decides, and how: a person through a channel, or (both null) the deadline. */
export interface Decider {
  userId: string | null;
  channel: DecisionChannel | null;
}

/** A decision as the ledger's lifecycle and the approved/rejected callbacks carry it. */
export function decisionData(row: ToolCallRow) {
  return {
    toolCallId: row.toolCallId,
    toolName: row.toolName,
    decidedBy: row.decidedByUserId,
    approverId: row.decidedByUserId,
    channel: row.decisionChannel,
    decidedAt: row.decidedAt,
    reason: row.decisionReason,
    kind: DECISION_KINDS[row.approval] ?? null,
    argumentsEdited: row.approvedInput !== null && row.approvedInput !== undefined,
  };
}

/**
 * Human decisions on staged tool calls, and their deadline. Each decision locks the action first, so
 * it and the runner take turns: whichever comes second sees what the first did.
 */
export function createApprovalsService(deps: {
  db: Kysely<DB>;
  jobs: Pick<JobRunner, 'enqueue'>;
  announce: () => void;
  /** An approved action is runnable again: the run dispatchers claim it (after the commit). */
  wakeRunners: () => void;
  clock: Clock;
  metrics: Pick<Metrics, 'approvalDecisions' | 'approvalDecisionSeconds'>;
  /** The tools, for the schema that edited arguments must meet. */
  tools: Pick<ToolRegistry, 'forOrg'>;
}) {
  async function decide(
    orgId: string,
    actionId: string,
    toolCallId: string,
    decider: Decider,
    decision: Decision,
    guard?: DecisionGuard,
  ) {
    const { userId } = decider;
    const outcome = await deps.db.transaction().execute(async (trx) => {
      const action = await actionsRepo.lock(trx, actionId);
      if (!action || action.orgId !== orgId) throw notFound('Action');
      const call = await toolCallsRepo.find(trx, orgId, actionId, toolCallId);
      if (!call) throw notFound('Tool call');
      if (call.status !== 'staged') {
        const refusal =
          call.approval === 'not_required'
            ? 'This tool call did not need approval'
            : `This tool call was ${call.approval} already`;
        return { kind: 'refused' as const, call, refusal, code: 'already_decided' as const };
      }
      const guarded = await guard?.(trx);
      if (guarded) return { kind: 'refused' as const, call, refusal: guarded, code: 'already_decided' as const };
      // One rule of who decides, whatever the channel: a person the action's rule names (the deadline is no one).
      if (userId && !(await mayDecide(trx, orgId, actionId, userId)))
        return { kind: 'refused' as const, call, refusal: NOT_AN_APPROVER, code: 'not_an_approver' as const };
      // Edited arguments are checked like the model's would be; a refusal leaves the call waiting.
      const edited = decision.kind === 'approve' ? decision.arguments : undefined;
      if (decision.kind === 'send_back' && call.toolName === BUDGET_APPROVAL)
        throw new AppError('validation_failed', 'A run over its budget is approved or rejected; there is no call to send back');
      if (edited)
        checkEditedArguments(
          (await deps.tools.forOrg(orgId)).get(call.toolName),
          call.toolName,
          edited,
          await argumentRulesOf(trx, actionId),
        );
      const now = deps.clock.now();
      // An interrupted call, rejected, is not run again: the run goes on with an error as its result.
      const interrupted = call.stagedReason === INTERRUPTED;
      const reason = decision.kind === 'expire' ? 'not decided before the deadline' : (decision.reason ?? null);
      const decided = (await toolCallsRepo.decide(trx, call.id, {
        ...(decision.kind === 'approve'
          ? { status: 'ready', approval: 'approved', startedAt: null, ...(edited && { approvedInput: JSON.stringify(edited) }) }
          : decision.kind === 'send_back'
            ? { status: 'sent_back', approval: 'sent_back', output: sentBack(decision.reason) }
            : decision.kind === 'reject'
              ? interrupted
                ? { status: 'failed', approval: 'rejected', output: notRunAgain(reason) }
                : { status: 'rejected', approval: 'rejected' }
              : { status: 'expired', approval: 'expired' }),
        userId,
        channel: decider.channel,
        reason,
        at: now,
      }))!;
      // While the runner is still settling the step (status running), it reads this decision itself.
      if (action.status !== 'pending_approval') return { kind: 'decided' as const, decided, resumed: false, callbacks: 0 };
      const data = decisionData(decided);
      // The run goes on: with the call (approved), or with a result in its place (sent back; an interrupted one not run again).
      if (decision.kind === 'approve' || decision.kind === 'send_back' || (decision.kind === 'reject' && interrupted)) {
        const waiting = (await toolCallsRepo.forAction(trx, actionId)).some((row) => row.status === 'staged');
        if (waiting) return { kind: 'decided' as const, decided, resumed: false, callbacks: 0 };
        const { callbacks } = await transition(trx, {
          actionId,
          from: 'pending_approval',
          to: 'approved',
          cause:
            decision.kind === 'approve'
              ? `${decided.toolName} approved`
              : decision.kind === 'send_back'
                ? `${decided.toolName} sent back: ${decision.reason}`
                : `${decided.toolName} not run again; the run goes on`,
          data,
        });
        return { kind: 'decided' as const, decided, resumed: true, callbacks };
      }
      await toolCallsRepo.cancelStaged(trx, actionId, now);
      const to = decision.kind === 'reject' ? 'rejected' : 'expired';
      const { callbacks } = await transition(trx, {
        actionId,
        from: 'pending_approval',
        to,
        cause: `${decided.toolName} ${to}${decided.decisionReason ? `: ${decided.decisionReason}` : ''}`,
        data,
      });
      return { kind: 'decided' as const, decided, resumed: false, callbacks };
    });
    if (outcome.kind === 'refused') {
      const { call, refusal, code } = outcome;
      // A person who came too late is on the record too (another decided first, a link used twice).
      if (decider.channel) {
        await toolCallsRepo.recordAttempt(deps.db, {
          id: randomUUID(),
          orgId,
          toolCallId: call.id,
          channel: decider.channel,
          userId,
          reason: refusal,
        });
      }
      throw new AppError(code, refusal);
    }
    const { decided } = outcome;
    deps.metrics.approvalDecisions.inc({ channel: decider.channel ?? 'deadline', decision: decided.approval });
    deps.metrics.approvalDecisionSeconds.observe(
      { channel: decider.channel ?? 'deadline' },
      Math.max(0, (decided.decidedAt!.getTime() - decided.requestedAt.getTime()) / 1000),
    );
    if (outcome.callbacks > 0) deps.announce();
    if (outcome.resumed) deps.wakeRunners();
    return decided;
  }

  return {
    /** Approves the call as it stands or, with `arguments`, as a person edited it. */
    approve: (
      orgId: string,
      actionId: string,
      toolCallId: string,
      decider: Decider,
      edit: { arguments?: Record<string, unknown>; reason?: string | null } = {},
    ) => decide(orgId, actionId, toolCallId, decider, { kind: 'approve', ...edit }),
    reject: (orgId: string, actionId: string, toolCallId: string, decider: Decider, reason: string | null) =>
      decide(orgId, actionId, toolCallId, decider, { kind: 'reject', reason }),
    /** Sends the call back with guidance: it is not run, the model gets the message, the action goes on. */
    sendBack: (orgId: string, actionId: string, toolCallId: string, decider: Decider, message: string) =>
      decide(orgId, actionId, toolCallId, decider, { kind: 'send_back', reason: message }),
    /** A decision another channel makes (an email's link or reply), with its own checks. */
    decideWith: (
      call: { orgId: string; actionId: string; toolCallId: string },
      decider: Decider,
      decision: Exclude<Decision, { kind: 'expire' }>,
      guard?: DecisionGuard,
    ) => decide(call.orgId, call.actionId, call.toolCallId, decider, decision, guard),

    /** The deadline job: expires the call if it is still staged and its time has come. */
    async expire(toolCallRowId: string): Promise<void> {
      const call = await toolCallsRepo.findById(deps.db, toolCallRowId);
      if (call?.status !== 'staged' || !call.expiresAt) return;
      if (call.expiresAt > deps.clock.now()) {
        await deps.jobs.enqueue('approvals.expire', { toolCallRowId }, { startAfter: call.expiresAt });
        return;
      }
      try {
        await decide(call.orgId, call.actionId, call.toolCallId, { userId: null, channel: null }, { kind: 'expire' });
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'already_decided')) throw error;
      }
    },

    /** An admin sees every call; any other member, the calls of the rules that name them (those they may decide). */
    async list(
      orgId: string,
      viewer: { id: string; role: UserRole },
      query: { status: ToolCallApproval; limit: number; cursor?: string },
    ) {
      const filter = { approval: query.status, ...(viewer.role !== 'Admin' && { namedUserId: viewer.id }) };
      const rows = await toolCallsRepo.listApprovals(deps.db, orgId, filter, query.limit, decodeCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return {
        approvals: page,
        nextCursor: rows.length > query.limit && last ? encodeCursor({ createdAt: last.requestedAt, id: last.id }) : null,
      };
    },
  };
}

export type ApprovalsService = ReturnType<typeof createApprovalsService>;
