import type { Kysely } from 'kysely';
import type { DB, DecisionChannel, ToolCallRow } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import { BUDGET_APPROVAL } from '../actions/budget-hold.ts';
import type { OrgTools } from '../agents/tool-registry.ts';
import { type DecisionRule, isApprover } from './approvers.repo.ts';
import type { Decision } from './decision-steps.ts';
import { checkEditedArguments } from './edited-arguments.ts';

/**
 * What a channel checks with the action locked, once the call is found waiting (a link is used
 * once, before its deadline). Its refusal refuses the decision and is recorded as an attempt.
 */
export type DecisionGuard = (trx: Kysely<DB>) => Promise<string | undefined>;

/** Why a person the rule does not name decides nothing (recorded as their attempt). */
export const NOT_AN_APPROVER =
  "Not one of this call's approvers: its action rule, or its inbox's assignment of the agent, names who may decide " +
  "(by default, the org's admins)";

/** Who decides, and how: a person through a channel, or (both null) the deadline. */
export interface Decider {
  userId: string | null;
  channel: DecisionChannel | null;
  /** The person as the channel knows them (a Slack user id). */
  externalId?: string | null;
  /** Names an attempt that may be made again (a reply read again by a retried job): its refusals are recorded once. */
  attemptOf?: string;
}

/** Why this person may not decide the call now: decided already, the channel's own check, or not an approver. */
export async function refusalToDecide(
  trx: Kysely<DB>,
  call: ToolCallRow,
  rule: DecisionRule,
  decider: Decider,
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
  if (decider.userId && !(await isApprover(trx, call.orgId, rule, decider.userId)))
    return { refusal: NOT_AN_APPROVER, code: 'not_an_approver' };
  return undefined;
}

/**
 * Why this decision changes nothing, if it does not (refusalToDecide). Edited arguments the tool or
 * the rule refuse, and a budget's continuation sent back, are errors (the call waits on).
 */
export async function refusalOf(
  trx: Kysely<DB>,
  call: ToolCallRow,
  rule: DecisionRule,
  attempt: {
    decider: Decider;
    decision: Decision;
    guard: DecisionGuard | undefined;
    /** The org's tools, read before the transaction, when the decision edits the arguments. */
    orgTools: OrgTools | undefined;
  },
) {
  const { decider, decision, guard, orgTools } = attempt;
  const refused = await refusalToDecide(trx, call, rule, decider, guard);
  if (refused) return refused;
  const edited = decision.kind === 'approve' && decision.arguments !== undefined;
  if (call.toolName === BUDGET_APPROVAL && (edited || decision.kind === 'send_back')) {
    const what = edited ? 'it has no arguments to edit' : 'there is no call to send back';
    throw new AppError('validation_failed', `A run over its budget is approved or rejected as it stands; ${what}`);
  }
  // Edited arguments are checked like the model's would be; a refusal leaves the call waiting.
  if (decision.kind === 'approve' && decision.arguments)
    checkEditedArguments(orgTools?.get(call.toolName), call.toolName, decision.arguments, rule);
  return undefined;
}
