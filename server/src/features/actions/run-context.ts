import type { ToolSet } from 'ai';
import type { Span } from '../../lib/tracing.ts';
import type { Insertable } from 'kysely';
import type {
  ModeSource,
  ToolCallRow,
  ThreadMessagesTable,
  ToolCallApproval,
  ToolCallMode,
  ToolCallsTable,
  ToolCallStatus,
} from '../../db/schema.ts';
import { decisiveRule, refusedBy, stricterMode } from '../agents/argument-rules.ts';
import type { ActionWrite } from './action-writes.ts';
import type { OrgTools } from '../agents/tool-registry.ts';
import type { actionsRepo } from './actions.repo.ts';
import { randomUUID } from 'node:crypto';
import { agentModePolicy, readApprovalDecision, resolveToolMode } from './approval-policy.ts';
import type { ProposedCall, ToolPlan } from './model-step.ts';

/**
 * What a run of the action runner works with: the action's context, its calls, its first message; a
 * live run's, the token of the claim it holds (its writes carry it), an experiment's replay none.
 */
export type RunContext = Awaited<ReturnType<typeof actionsRepo.runContexts>>[number] & { runToken?: string };
export type Message = { role: 'user' | 'assistant' | 'tool'; content: unknown };

/** A tool call as the runner tracks it (input and output parsed). */
export interface Call {
  id: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
  mode: ToolCallMode;
  /** What decided the mode; null for a call of no tool. */
  modeSource: ModeSource | null;
  status: ToolCallStatus;
  approval: ToolCallApproval;
  output: unknown;
  expiresAt: Date | null;
  /** When the request of a call that may not be repeated left; set and no result: the run was cut short meanwhile. */
  startedAt: Date | null;
  stagedReason: string | null;
  /** Recorded as started by a run before this one, which died before its result was stored. */
  interrupted?: boolean;
  /** A person approved it with other arguments than the model's: `input` is theirs, and the model is told. */
  edited?: boolean;
}

/** A stored call as a run tracks it: one approved with edits runs with the approved arguments. */
export const callOf = (row: ToolCallRow): Call => ({
  ...row,
  input: row.approvedInput ?? row.input,
  output: row.output ?? null,
  interrupted: row.status === 'ready' && row.startedAt !== null,
  edited: row.approvedInput !== null && row.approvedInput !== undefined,
});

/** One run of an action in this process: what it knows, kept in step with what it stored. */
export interface Run {
  context: RunContext;
  plans: Map<string, ToolPlan>;
  tools: ToolSet;
  threadId: string;
  messages: Message[];
  calls: Map<string, Call>;
  signal: AbortSignal;
  /** The run's span: its model and tool calls' spans are its children. */
  span: Span;
  /** The call whose request may have left and whose result is not stored yet: if the run fails now, it may have been done. */
  unsettled?: Call;
  /** A new conversation, stored with the run's first write (a model call before it has no effect to keep). */
  opening?: Required<Pick<ActionWrite, 'thread'>> & { message: Insertable<ThreadMessagesTable> };
}

/** Why an interrupted call waits: shown in the ledger and the approvals inbox. */
export const INTERRUPTED = 'interrupted: the server may or may not have done it';

/** A reason the action fails, shown in the ledger as its error. */
export class ActionFailure extends Error {}

export const DENIED_BY_PREFERENCE = {
  type: 'execution-denied',
  reason: 'The user has chosen to always deny this tool; it was not run.',
};

/** Whether the action's rule tells approvers (by email, in Slack) when it starts to wait: an `approvals.notify` job. */
export const notifiesApprovers = (run: Run) => (run.context.notify?.length ?? 0) > 0;

/** When a call staged now expires: the rule's approval deadline (a day without a rule). */
export const approvalDeadline = (context: RunContext, now: Date) =>
  new Date(now.getTime() + (context.approvalTimeoutSeconds ?? 86_400) * 1000);

/** The row of a call: `position` is its place among the action's calls, as proposed. */
export const toRow = (call: Call, context: RunContext, requestedAt: Date, position: number): Insertable<ToolCallsTable> => ({
  id: call.id,
  orgId: context.orgId,
  actionId: context.id,
  toolCallId: call.toolCallId,
  toolName: call.toolName,
  position,
  input: JSON.stringify(call.input ?? null),
  mode: call.mode,
  modeSource: call.modeSource === null ? null : JSON.stringify(call.modeSource),
  status: call.status,
  approval: call.approval,
  output: call.output === null ? null : JSON.stringify(call.output),
  requestedAt,
  expiresAt: call.expiresAt,
  completedAt: call.status === 'staged' || call.status === 'ready' ? null : requestedAt,
  startedAt: call.startedAt,
  stagedReason: call.stagedReason,
});

/** Each of the agent's tools the org has, with its resolved approval mode. */
export function planTools(tools: OrgTools, context: RunContext): Map<string, ToolPlan> {
  const denied = new Set(context.deniedTools ?? []);
  const plans = new Map<string, ToolPlan>();
  // An action that answers an email can always answer it, whatever other tools its agent has.
  const names = new Set([...(context.tools ?? []), ...(context.source === 'email' ? ['sendEmail'] : [])]);
  for (const name of names) {
    const definition = tools.get(name);
    if (!definition) continue; // a tool the org no longer has
    const { mode, source } = resolveToolMode({
      toolName: name,
      ruleDefaults: context.approvalRules ?? {},
      requestOverrides: context.toolApprovals,
      allowOverrides: context.allowRequestOverrides === true,
      alwaysDeny: denied.has(name),
    });
    plans.set(name, { definition, mode, source });
  }
  return plans;
}

/** The system instructions: the agent's, the rule's, and the policy of `agent`-mode tools. */
export function instructionsOf(context: RunContext, plans: Map<string, ToolPlan>): string {
  const agentModeTools = [...plans].filter(([, plan]) => plan.mode === 'agent').map(([name]) => name);
  return [context.agentInstructions, context.ruleInstructions, agentModeTools.length > 0 ? agentModePolicy(agentModeTools) : '']
    .map((part) => part?.trim())
    .filter(Boolean)
    .join('\n\n');
}

/** The first message: the request's own instructions and the event as context. */
export function eventMessage(context: RunContext): Message {
  const lines = [];
  if (context.instructions?.trim()) lines.push(`Instructions for this event:\n${context.instructions.trim()}`, '');
  lines.push(`Event type: ${context.eventType}`);
  if (context.externalId) lines.push(`External id: ${context.externalId}`);
  lines.push('Event data (JSON):', JSON.stringify(context.data ?? {}, null, 2));
  return { role: 'user', content: lines.join('\n') };
}

/**
 * The stored row of each call the model proposed: its mode decides whether it runs, waits or is
 * refused. The mode is the tool's, made stricter by the strictest argument rule that holds for the
 * call's arguments (in `agent` mode, the arguments without the model's decision).
 */
export function decideCall(run: Run, call: ProposedCall, now: Date): Call {
  const base = {
    id: randomUUID(),
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    input: call.input ?? null,
    expiresAt: null,
    output: null,
    startedAt: null,
    stagedReason: null,
  };
  const tool = run.plans.get(call.toolName);
  if (!tool) {
    return {
      ...base,
      modeSource: null,
      mode: 'allow',
      status: 'failed',
      approval: 'not_required',
      output: { type: 'error-text', value: `There is no tool named "${call.toolName}" available to you.` },
    };
  }
  const decision = tool.mode === 'agent' && !call.invalid ? readApprovalDecision(call.input) : undefined;
  const rule =
    tool.mode === 'deny'
      ? undefined
      : decisiveRule(run.context.argumentRules ?? [], call.toolName, decision?.input ?? call.input);
  const plan = rule
    ? { mode: stricterMode(tool.mode, rule.rule.mode), source: { source: 'argument_rule' as const, ...rule } }
    : tool;
  if (plan.mode === 'deny') {
    const output = rule
      ? {
          type: 'execution-denied',
          reason: `${refusedBy(run.context.source, rule)}; the call was not run.`,
        }
      : DENIED_BY_PREFERENCE;
    return { ...base, mode: 'deny', modeSource: plan.source, status: 'denied', approval: 'not_required', output };
  }
  // A call that runs at once and may not be repeated is recorded as started with this step: committed
  // before its request leaves, with no commit of its own (a crash before it leaves errs on the safe side).
  const startedAt = tool.definition.repeatable === false ? now : null;
  if (plan.mode === 'allow')
    return { ...base, mode: 'allow', modeSource: plan.source, status: 'ready', approval: 'not_required', startedAt };
  const staged = {
    status: 'staged' as const,
    approval: 'pending' as const,
    expiresAt: approvalDeadline(run.context, now),
  };
  // An `agent` call an argument rule sends to a human keeps its arguments without the model's decision.
  const input = decision ? (decision.input ?? null) : base.input;
  if (plan.mode === 'ask') return { ...base, input, mode: 'ask', modeSource: plan.source, ...staged };
  // agent: fail-closed; a malformed call keeps its raw input for the human to judge.
  return decision?.runNow
    ? { ...base, input, mode: 'agent', modeSource: plan.source, status: 'ready', approval: 'not_required', startedAt }
    : { ...base, input, mode: 'agent', modeSource: plan.source, ...staged };
}
