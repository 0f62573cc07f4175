/** The payload of an action webhook: what `send` posts. */
export interface ActionWebhookPayload {
  eventType: string;
  /** Idempotency key: a second event with the same externalId returns the first action. `send` fills in a UUID when absent. */
  externalId?: string;
  /** An external user id (with authProvider) or an internal user UUID; the webhook's run-as user otherwise. */
  userId?: string;
  authProvider?: string;
  actionRuleId?: string;
  instructions?: string;
  /** Per-request approval modes; honoured only when the webhook allows overrides. */
  toolApprovals?: Record<string, 'allow' | 'ask' | 'agent'>;
  data?: Record<string, unknown>;
}

export const CALLBACK_EVENT_TYPES = [
  'action.pending_approval',
  'action.approved',
  'action.completed',
  'action.failed',
  'action.rejected',
  'action.expired',
] as const;
export type CallbackEventType = (typeof CALLBACK_EVENT_TYPES)[number];

/** What every callback says about its action. */
export interface ActionIdentity {
  actionId: string;
  webhookId: string;
  webhookIdentifier: string;
  /** The webhook event (delivery) that created the action. */
  eventId: string;
  externalId: string | null;
  eventType: string;
  /** The agent's version the action runs with (null: it has no agent; absent from older servers). */
  agentVersion?: number | null;
}

/** A tool call waiting for a human decision. */
export interface StagedToolCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** ISO time after which the call expires undecided. */
  expiresAt: string | null;
}

/** A decision on a staged tool call; `decidedBy` is null when the deadline decided (expired). */
export interface ToolCallDecision {
  toolCallId: string;
  toolName: string;
  decidedBy: string | null;
  /** The person who decided (as `decidedBy`); null when the deadline decided. */
  approverId: string | null;
  /** How the decision was made; null when the deadline decided. */
  channel: 'console' | 'api' | 'email_link' | 'email_reply' | 'slack' | null;
  decidedAt: string | null;
  reason: string | null;
  /** What was decided; `send_back` comes with action.approved: the call was not run, its message went to the agent. */
  kind?: 'approve' | 'reject' | 'expire' | 'send_back' | null;
  /** Approved with other arguments than the model's (absent from older servers). */
  argumentsEdited?: boolean;
}

interface Envelope<Type extends CallbackEventType, Data> {
  type: Type;
  /** ISO time of the transition. */
  timestamp: string;
  data: ActionIdentity & Data;
}

export type PendingApprovalEvent = Envelope<
  'action.pending_approval',
  {
    status: 'pending_approval';
    toolCall: StagedToolCall;
    toolCalls: StagedToolCall[];
    /** Set when the run waits for another reason than its tool calls' modes: "budget exceeded" (a continueOverBudget call). */
    reason?: string;
  }
>;
export type ApprovedEvent = Envelope<'action.approved', { status: 'approved'; decision: ToolCallDecision }>;
export type CompletedEvent = Envelope<'action.completed', { status: 'completed'; result: unknown }>;
export type FailedEvent = Envelope<'action.failed', { status: 'failed'; error: string }>;
export type RejectedEvent = Envelope<'action.rejected', { status: 'rejected'; decision: ToolCallDecision }>;
export type ExpiredEvent = Envelope<'action.expired', { status: 'expired'; decision: ToolCallDecision }>;

/** A lifecycle callback: narrow on `type`. */
export type CallbackEvent = PendingApprovalEvent | ApprovedEvent | CompletedEvent | FailedEvent | RejectedEvent | ExpiredEvent;
