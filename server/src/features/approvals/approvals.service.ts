import type { Kysely } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { DB, DecisionChannel, ToolCallApproval, ToolCallRow, UserRole } from '../../db/schema.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { uuidFromKey } from '../../lib/crypto.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { decodeCursor, encodeCursor } from '../../lib/pagination.ts';
import { actionsRepo } from '../actions/actions.repo.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import type { OrgTools, ToolRegistry } from '../agents/tool-registry.ts';
import type { Clock } from '../../lib/clock.ts';
import { approvalsRepo } from './approvals.repo.ts';
import { decisionRuleOf } from './approvers.repo.ts';
import { type ApprovalCount, callChanges, countApproval, type Decision, moveAction } from './decision-steps.ts';
import { type DecidedCall, standingApproval } from './standing-approvals.ts';
import { transaction } from '../../db/after-commit.ts';
import { type Decider, type DecisionGuard, refusalOf, refusalToDecide } from './decision-refusals.ts';

export type { Decision } from './decision-steps.ts';
export type { Decider, DecisionGuard } from './decision-refusals.ts';

/** The longest reason a decision keeps, whichever channel it comes by. */
export const MAX_DECISION_REASON_CHARS = 2000;

/**
 * Human decisions on staged tool calls, and their deadline: the one place that says who may decide
 * (the action's rule), what each kind of decision does, and what is recorded, for every channel.
 * Each decision locks the action first, so it and the runner take turns: whichever comes second sees
 * what the first did.
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
  /** In the decision's transaction, once it is made (a channel that shows the call updates it: Slack). */
  afterDecision?: (trx: Kysely<DB>, call: ToolCallRow) => Promise<void>;
}) {
  /** Refused attempts, on each call's record (a link used twice, a reply from the wrong address, another approver first). */
  async function recordRefusals(
    orgId: string,
    callRowIds: string[],
    decider: Decider & { channel: DecisionChannel },
    reason: string,
  ) {
    const { channel, userId, attemptOf } = decider;
    const externalUserId = decider.externalId ?? null;
    for (const toolCallId of callRowIds)
      await approvalsRepo.recordAttempt(deps.db, {
        id: attemptOf ? uuidFromKey(`${attemptOf}/${toolCallId}`) : randomUUID(),
        orgId,
        toolCallId,
        channel,
        userId,
        externalUserId,
        reason,
      });
  }

  /** What a decision finds and writes under the action's lock (`locked`: was it runnable): refused, counted or decided. */
  async function decideLocked(
    trx: Kysely<DB>,
    ref: { orgId: string; actionId: string; toolCallId: string },
    decider: Decider,
    decision: Decision,
    guard: DecisionGuard | undefined,
    locked: { runnable: boolean },
    orgTools: OrgTools | undefined,
  ) {
    const { orgId, actionId, toolCallId } = ref;
    const { userId, channel } = decider;
    const action = await actionsRepo.lock(trx, orgId, actionId);
    if (!action) throw notFound('Action');
    locked.runnable = action.status === 'approved' || action.status === 'queued';
    const call = await toolCallsRepo.find(trx, orgId, actionId, toolCallId);
    const rule = await decisionRuleOf(trx, orgId, actionId);
    if (!call || !rule) throw notFound('Tool call');
    const refused = await refusalOf(trx, call, rule, { decider, decision, guard, orgTools });
    if (refused) return { kind: 'refused' as const, call, ...refused };
    const now = deps.clock.now();
    const reason = decision.kind === 'expire' ? 'not decided before the deadline' : (decision.reason ?? null);
    // An approval counts towards the rule's minApprovals; the call runs once they are all in.
    let count: ApprovalCount | undefined;
    if (decision.kind === 'approve' && channel) {
      const approval = { userId, channel, externalId: decider.externalId ?? null, reason, at: now };
      count = await countApproval(trx, call, approval, decision.arguments, rule);
      if (!count.complete) {
        if (!count.counted) await deps.afterDecision?.(trx, call);
        return { kind: 'counted' as const, call, rule, count };
      }
    }
    const decided = (await approvalsRepo.decide(trx, call.id, {
      ...callChanges(call, decision, count?.approvedInput),
      userId,
      channel,
      externalId: decider.externalId ?? null,
      reason,
      at: now,
    }))!;
    await deps.afterDecision?.(trx, decided);
    // While the runner is still settling the step (status running), it reads this decision itself.
    const moved =
      action.status === 'pending_approval' ? await moveAction(trx, decided, decision, now) : { resumed: false, callbacks: 0 };
    return { kind: 'decided' as const, decided, rule, ...moved };
  }

  async function decide(
    orgId: string,
    actionId: string,
    toolCallId: string,
    decider: Decider,
    decision: Decision,
    guard?: DecisionGuard,
  ): Promise<DecidedCall> {
    const { channel } = decider;
    const ref = { orgId, actionId, toolCallId };
    const locked = { runnable: false };
    // Read before the transaction: the org's tools may come from the database (its MCP servers), and on
    // PGlite's one connection a read beside the open transaction would wait for it for ever.
    const orgTools = decision.kind === 'approve' && decision.arguments ? await deps.tools.forOrg(orgId) : undefined;
    const deciding = transaction(deps.db, (trx) => decideLocked(trx, ref, decider, decision, guard, locked, orgTools));
    const outcome = await deciding.finally(() => {
      // A runners' claim that ran while this held a runnable action's lock skipped it: it would wait for the poll.
      if (locked.runnable) deps.wakeRunners();
    });
    if (outcome.kind === 'refused') {
      const { call, refusal, code } = outcome;
      // A person who came too late is on the record too (another decided first, a link used twice).
      if (channel) await recordRefusals(orgId, [call.id], { ...decider, channel }, refusal);
      throw new AppError(code, refusal);
    }
    const row = outcome.kind === 'counted' ? (await toolCallsRepo.findById(deps.db, outcome.call.id))! : outcome.decided;
    const standing = (await approvalsRepo.currentApprovals(deps.db, row.id)).map(standingApproval);
    const result = { ...row, approvalsRequired: outcome.rule.minApprovals, approvals: standing };
    if (outcome.kind === 'counted') return result;
    deps.metrics.approvalDecisions.inc({ channel: channel ?? 'deadline', decision: row.approval });
    deps.metrics.approvalDecisionSeconds.observe(
      { channel: channel ?? 'deadline' },
      Math.max(0, (row.decidedAt!.getTime() - row.requestedAt.getTime()) / 1000),
    );
    if (outcome.callbacks > 0) deps.announce();
    if (outcome.resumed) deps.wakeRunners();
    return result;
  }

  return {
    /** Approves the call as it stands or, with `arguments`, as a person edited it (one of minApprovals). */
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
    /** A channel's own refusal (a reply from the wrong address, an unclear one), on the record of each call. */
    recordRefusals,

    /**
     * Before a channel asks a person for more (a modal for a reason, a message or edits): the call as it
     * stands, or why this person may not decide it now (recorded, as any refused attempt).
     */
    async beforeDeciding(
      ref: { orgId: string; actionId: string; toolCallId: string },
      decider: Decider & { channel: DecisionChannel },
    ) {
      const call = await toolCallsRepo.find(deps.db, ref.orgId, ref.actionId, ref.toolCallId);
      const rule = await decisionRuleOf(deps.db, ref.orgId, ref.actionId);
      if (!call || !rule) return { refusal: 'This tool call no longer exists' };
      const refused = await refusalToDecide(deps.db, call, rule, decider, undefined);
      if (!refused) return { call };
      await recordRefusals(ref.orgId, [call.id], decider, refused.refusal);
      return { refusal: refused.refusal, call };
    },

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
      const rows = await approvalsRepo.listApprovals(deps.db, orgId, filter, query.limit, decodeCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const approvals = await approvalsRepo.approvalsOf(
        deps.db,
        page.map((row) => row.id),
      );
      const last = page.at(-1);
      return {
        approvals: page.map((row) => ({
          ...row,
          approvals: approvals
            .filter((approval) => approval.toolCallId === row.id && approval.supersededAt === null)
            .map(standingApproval),
        })),
        nextCursor: rows.length > query.limit && last ? encodeCursor({ createdAt: last.requestedAt, id: last.id }) : null,
      };
    },
  };
}

export type ApprovalsService = ReturnType<typeof createApprovalsService>;
