import type { ColumnType } from 'kysely';
import type { ApprovalMode, CreatedAt, Json, UpdatedAt } from './schema.ts';

/** Tool calls, how their mode is decided, and users' tool preferences (schema.ts lists every table in DB). */
/** A tool call's resolved mode: an approval mode, or `deny` (the user's "always deny", or an argument rule). */
export type ToolCallMode = ApprovalMode | 'deny';
/** An action rule's rule on a call's arguments: when it matches, the call is at least `mode`. */
export const ARGUMENT_RULE_OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'matches', 'exists'] as const;
export type ArgumentRuleOp = (typeof ARGUMENT_RULE_OPS)[number];
export interface ArgumentRule {
  tool: string;
  /** JSON Pointer (RFC 6901) into the call's arguments. */
  path: string;
  op: ArgumentRuleOp;
  value?: unknown;
  mode: 'ask' | 'deny';
}
/**
 * What decided a call's mode: the user's preference, a request override, the rule's mode for the tool, the default, or
 * an argument rule.
 */
export type ModeSource =
  | { source: 'preference' | 'override' | 'rule' | 'default' }
  /** A run over its budget waits for a person (actions/budget-hold.ts). */
  | { source: 'budget' }
  | { source: 'argument_rule'; index: number; rule: ArgumentRule };
/**
 * How a decision on a staged call was made: in the console (a session cookie), through the API (a bearer token), by an
 * approval email's link or by a reply to it, or in Slack.
 */
export const DECISION_CHANNELS = ['console', 'api', 'email_link', 'email_reply', 'slack'] as const;
export type DecisionChannel = (typeof DECISION_CHANNELS)[number];
export const TOOL_CALL_STATUSES = [
  'ready',
  'staged',
  'completed',
  'failed',
  'denied',
  'rejected',
  'expired',
  'cancelled',
  'sent_back',
] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];
export const TOOL_CALL_APPROVALS = [
  'not_required',
  'pending',
  'approved',
  'rejected',
  'expired',
  'cancelled',
  'sent_back',
] as const;
export type ToolCallApproval = (typeof TOOL_CALL_APPROVALS)[number];

export interface ToolCallsTable {
  id: string;
  orgId: string;
  actionId: string;
  toolCallId: string;
  toolName: string;
  /** Its place among the action's calls (from 0), in the order the model proposed them. */
  position: number;
  input: Json;
  mode: ToolCallMode;
  status: ToolCallStatus;
  approval: ToolCallApproval;
  output: Json;
  requestedAt: CreatedAt;
  expiresAt: Date | null;
  decidedByUserId: string | null;
  decidedAt: Date | null;
  decisionReason: string | null;
  completedAt: Date | null;
  /** Set, and committed, before the request of a call that may not be repeated leaves. */
  startedAt: Date | null;
  modeSource: ColumnType<ModeSource | null, string | null | undefined, string | null>;
  /** Why a call waits for a human other than its mode (an interrupted call). */
  stagedReason: string | null;
  /** How a human decided it; null while undecided, or when the deadline did. */
  decisionChannel: DecisionChannel | null;
  /** The arguments a person approved in place of the model's (input); it runs with them. Null: not edited. */
  approvedInput: Json;
  /** Who decided as the channel knows them (a Slack user id), beside the member. */
  decidedByExternalId: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An attempt to decide a call that was refused (decided already, a used link, the wrong sender), kept for the record. */
export interface ApprovalAttemptsTable {
  id: string;
  orgId: string;
  toolCallId: string;
  channel: DecisionChannel;
  userId: string | null;
  reason: string;
  /** Who tried, as the channel knows them (a Slack user id). */
  externalUserId: ColumnType<string | null, string | null | undefined, string | null>;
  createdAt: CreatedAt;
}

/**
 * One approver's approval of a staged call (a rule may ask for several: min_approvals). `arguments`: what they approved
 * when a person had edited them (null: the model's). An edit that changes the arguments supersedes the approvals before it.
 */
export interface ToolCallApprovalsTable {
  id: string;
  orgId: string;
  toolCallId: string;
  userId: string | null;
  channel: DecisionChannel;
  arguments: Json;
  reason: string | null;
  supersededAt: Date | null;
  /** The approver as the channel knows them (a Slack user id). */
  externalUserId: ColumnType<string | null, string | null | undefined, string | null>;
  createdAt: CreatedAt;
}

export interface UserToolPreferencesTable {
  userId: string;
  toolName: string;
  preference: 'always_deny';
  updatedAt: UpdatedAt;
}
