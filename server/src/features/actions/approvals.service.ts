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

/** What a decision makes of the call: it runs (approved, with the edited arguments if any), or it gets its end. */
function callChanges(call: ToolCallRow, decision: Decision) {
  // An interrupted call, rejected, is not run again: the run goes on with an error as its result.
  const interrupted = call.stagedReason === INTERRUPTED;
  switch (decision.kind) {
    case 'approve':
      return {
        status: 'ready' as const,
        approval: 'approved' as const,
        startedAt: null,
        ...(decision.arguments && { approvedInput: JSON.stringify(decision.arguments) }),
      };
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
  /**
   * Why this decision changes nothing, if it does not: the call is decided already, the channel's own
   * check refuses it, or the decider is not one of the rule's approvers. Edited arguments the tool or
   * the rule refuse, and a budget's continuation sent back, are errors (the call waits on).
   */
  async function refusalOf(
    trx: Kysely<DB>,
    call: ToolCallRow,
    decider: Decider,
    decision: Decision,
    guard: DecisionGuard | undefined,
  ): Promise<{ refusal: string; code: 'already_decided' | 'not_an_approver' } | undefined> {
    if (call.status !== 'staged') {
      const refusal =
        call.approval === 'not_required' ? 'This tool call did not need approval' : `This tool call was ${call.approval} already`;
      return { refusal, code: 'already_decided' };
    }
    const guarded = await guard?.(trx);
    if (guarded) return { refusal: guarded, code: 'already_decided' };
    // One rule of who decides, whatever the channel: a person the action's rule names (the deadline is no one).
    if (decider.userId && !(await mayDecide(trx, call.orgId, call.actionId, decider.userId)))
      return { refusal: NOT_AN_APPROVER, code: 'not_an_approver' };
    if (decision.kind === 'send_back' && call.toolName === BUDGET_APPROVAL)
      throw new AppError('validation_failed', 'A run over its budget is approved or rejected; there is no call to send back');
    // Edited arguments are checked like the model's would be; a refusal leaves the call waiting.
    if (decision.kind === 'approve' && decision.arguments) {
      const tool = (await deps.tools.forOrg(call.orgId)).get(call.toolName);
      checkEditedArguments(tool, call.toolName, decision.arguments, await argumentRulesOf(trx, call.actionId));
    }
    return undefined;
  }

  /**
   * The action after a decision on one of its calls: it goes on once none waits (approved, sent back,
   * an interrupted call not run again), or it ends (rejected, expired) and its other calls are cancelled.
   */
  async function moveAction(trx: Kysely<DB>, decided: ToolCallRow, decision: Decision, now: Date) {
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
      const refused = await refusalOf(trx, call, decider, decision, guard);
      if (refused) return { kind: 'refused' as const, call, ...refused };
      const now = deps.clock.now();
      const decided = (await toolCallsRepo.decide(trx, call.id, {
        ...callChanges(call, decision),
        userId,
        channel: decider.channel,
        reason: decision.kind === 'expire' ? 'not decided before the deadline' : (decision.reason ?? null),
        at: now,
      }))!;
      // While the runner is still settling the step (status running), it reads this decision itself.
      if (action.status !== 'pending_approval') return { kind: 'decided' as const, decided, resumed: false, callbacks: 0 };
      return { kind: 'decided' as const, decided, ...(await moveAction(trx, decided, decision, now)) };
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
