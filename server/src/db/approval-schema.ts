import type { ColumnType } from 'kysely';
import type { CreatedAt, UpdatedAt } from './schema.ts';

/** Who an action rule asks to decide its staged calls: named members, all admins, or both; null on the rule: the org's admins. */
export interface RuleApprovers {
  userIds?: string[];
  role?: 'Admin';
}
/** How approvers are told that a call waits for them. */
export const NOTIFY_CHANNELS = ['email', 'slack'] as const;
export type NotifyChannel = (typeof NOTIFY_CHANNELS)[number];
/** sending: stored, the send not confirmed yet; not_sent: never sent (the reason says why); failed: the provider refused it. */
export const APPROVAL_NOTIFICATION_STATUSES = ['sending', 'sent', 'not_sent', 'failed'] as const;
export type ApprovalNotificationStatus = (typeof APPROVAL_NOTIFICATION_STATUSES)[number];
export const LINK_DECISIONS = ['approve', 'reject'] as const;
export type LinkDecision = (typeof LINK_DECISIONS)[number];

/** One approver told (or not, and why) of one staged call; a batched email is one row per call it lists. */
export interface ApprovalNotificationsTable {
  id: string;
  orgId: string;
  actionId: string;
  toolCallId: string;
  userId: string | null;
  channel: NotifyChannel;
  address: string | null;
  status: ApprovalNotificationStatus;
  reason: string | null;
  emailMessageId: string | null;
  /** In Slack: the message that shows the call (its channel is `address`). */
  slackTs: ColumnType<string | null, string | null | undefined, string | null>;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

/** An org's own Slack app: the bot token and signing secret are encrypted (box), shown only as hints. */
export interface SlackIntegrationsTable {
  orgId: string;
  botToken: string;
  botTokenHint: string;
  signingSecret: string;
  signingSecretHint: string;
  /** The channel approval messages go to (an id such as C0123, or a name). */
  channel: string;
  teamId: string;
  teamName: string | null;
  botUserId: string | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

/** Interactions taken, by their signature, for as long as Slack's timestamps are accepted: a replay decides nothing. */
export interface SlackInteractionsSeenTable {
  signature: string;
  createdAt: CreatedAt;
}

/** A one-time link of an approval email: bound to one approver, one call and one decision; only its token's SHA-256 is kept. */
export interface ApprovalLinksTable {
  id: string;
  orgId: string;
  toolCallId: string;
  userId: string;
  notificationId: string;
  decision: LinkDecision;
  tokenHash: string;
  expiresAt: Date;
  usedAt: Date | null;
  createdAt: CreatedAt;
}

/**
 * waiting: stored by the inbound path for the reply job; read: the job read it (the message's status detail says what
 * it did).
 */
export const APPROVAL_REPLY_STATES = ['waiting', 'read'] as const;
export type ApprovalReplyState = (typeof APPROVAL_REPLY_STATES)[number];

/** A received email that answers one of our approval emails, and whether the reply job has read it. */
export interface ApprovalRepliesTable {
  messageId: string;
  orgId: string;
  state: ApprovalReplyState;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export type ApproversColumn = ColumnType<RuleApprovers | null, string | null | undefined, string | null>;
export type NotifyColumn = ColumnType<NotifyChannel[], string | undefined, string>;
