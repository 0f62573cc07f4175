import type { ColumnType, Generated, Selectable } from 'kysely';
import type { ApprovalMode, ArgumentRule, CreatedAt, UpdatedAt } from './schema.ts';
import type { ApproversColumn, NotifyColumn } from './approval-schema.ts';

/** The email side's tables (the rest are in schema.ts, which lists them all in DB). */
export interface EmailIntegrationsTable {
  orgId: string;
  apiKeyEncrypted: string;
  apiKeyHint: string;
  webhookSecretEncrypted: string;
  webhookSecretHint: string;
  fromEmail: string;
  fromName: string | null;
  /** The provider's status of fromEmail's domain when last checked (verified, pending, ...); null: never checked. */
  domainStatus: string | null;
  domainReceiving: boolean | null;
  domainCheckedAt: Date | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export type EmailIntegrationRow = Selectable<EmailIntegrationsTable>;

export interface EmailInboxesTable {
  id: string;
  orgId: string;
  /** Lower-cased; unique across all orgs. */
  emailAddress: string;
  displayName: string;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface EmailInboxAgentsTable {
  inboxId: string;
  agentId: string;
  orgId: string;
  isPrimary: boolean;
  autoRespond: boolean;
  /** Approval modes per tool for this inbox's actions; null: sendEmail `allow` for an auto-response, every other tool `ask`. */
  approvalRules: ColumnType<Record<string, ApprovalMode> | null, string | null, string | null>;
  /** Rules on the calls' arguments that make a call stricter, as an action rule's argument rules. */
  argumentRules: ColumnType<ArgumentRule[], string | undefined, string>;
  /** How the approvers are told that one of this inbox's actions waits (email, Slack), as an action rule's notify. */
  notify: NotifyColumn;
  /** Who decides this inbox's calls of the agent (null: the org's admins), as an action rule's approvers. */
  approvers: ApproversColumn;
  /** How many distinct approvers must approve one of those calls before it runs (1 to 5). */
  minApprovals: Generated<number>;
  /** The user an auto-response runs as. */
  assignedByUserId: string | null;
  createdAt: CreatedAt;
}

export type EmailInboxRow = Selectable<EmailInboxesTable>;
export type EmailInboxAgentRow = Selectable<EmailInboxAgentsTable>;

export const EMAIL_DIRECTIONS = ['inbound', 'outbound'] as const;
export type EmailDirection = (typeof EMAIL_DIRECTIONS)[number];
/**
 * An inbound message is `received`; an outbound one goes `sending` (stored, not yet accepted) ->
 * `sent` (accepted by the provider) -> what the provider's notifications say of it since.
 */
export const EMAIL_MESSAGE_STATUSES = [
  'received',
  'sending',
  'sent',
  'delivered',
  'delivery_delayed',
  'opened',
  'clicked',
  'bounced',
  'complained',
  'failed',
  'suppressed',
] as const;
export type EmailMessageStatus = (typeof EMAIL_MESSAGE_STATUSES)[number];
export const EMAIL_ATTACHMENT_STATUSES = ['stored', 'failed', 'skipped', 'attached'] as const;
export type EmailAttachmentStatus = (typeof EMAIL_ATTACHMENT_STATUSES)[number];
export const EMAIL_NOTIFICATION_STATUSES = ['received', 'processed', 'ignored', 'failed'] as const;
export type EmailNotificationStatus = (typeof EMAIL_NOTIFICATION_STATUSES)[number];

type JsonOf<T> = ColumnType<T, string | undefined, string>;

export interface EmailMessagesTable {
  id: string;
  orgId: string;
  threadId: string;
  inboxId: string | null;
  direction: EmailDirection;
  /** The provider's id of the email (received or sent). */
  providerEmailId: string | null;
  /** Message-ID without its angle brackets: the sender's (inbound) or the one we generated (outbound). */
  messageId: string | null;
  /** Outbound: the Message-ID the provider gave what we sent (it may replace ours). */
  providerMessageId: string | null;
  inReplyTo: string | null;
  referenceIds: JsonOf<string[]>;
  fromAddress: string;
  toAddresses: JsonOf<string[]>;
  ccAddresses: JsonOf<string[]>;
  subject: string;
  /** Inbound: its Date header; outbound: when the provider accepted it. */
  sentAt: Date | null;
  textBody: string;
  /** Sanitized before it was stored. */
  htmlBody: string | null;
  headers: JsonOf<Record<string, string>>;
  /** Inbound: the provider's SPF, DKIM and DMARC results (`pass`, `fail`, ...), when it gave them. */
  authentication: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  status: EmailMessageStatus;
  /** Inbound: what became of it (answered by an agent, or why not); outbound: the provider's last word. */
  statusDetail: string | null;
  /** Outbound: the action whose sendEmail sent it. */
  actionId: string | null;
  toolCallId: string | null;
  /**
   * Outbound, while `sending`: what the send adds that is not stored in the clear (DeliveryExtras as
   * JSON, sealed), so that a send cut off is sent again as it was; cleared once the provider answered.
   */
  sealedExtras: ColumnType<string | null, string | null | undefined, string | null>;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface EmailAttachmentsTable {
  id: string;
  orgId: string;
  messageId: string;
  /** Its place among the message's attachments (the order they came or were attached in). */
  position: number;
  providerAttachmentId: string | null;
  /** Outbound: the attached document (its PDF is the content). */
  documentId: string | null;
  filename: string;
  contentType: string;
  contentDisposition: string | null;
  contentId: string | null;
  sizeBytes: ColumnType<number, number, number>;
  content: Uint8Array | null;
  status: EmailAttachmentStatus;
  error: string | null;
  createdAt: CreatedAt;
}

export interface EmailDeliveryEventsTable {
  id: string;
  orgId: string;
  messageId: string;
  type: string;
  data: ColumnType<unknown, string | null, string | null>;
  occurredAt: Date;
  createdAt: CreatedAt;
}

export interface EmailSuppressionsTable {
  orgId: string;
  address: string;
  reason: 'bounced' | 'complained' | 'provider_suppressed';
  detail: string | null;
  messageId: string | null;
  createdAt: CreatedAt;
}

export interface EmailNotificationsTable {
  id: string;
  orgId: string | null;
  svixId: string;
  eventType: string;
  status: EmailNotificationStatus;
  reason: string | null;
  payload: ColumnType<unknown, string | null, string | null>;
  headers: JsonOf<Record<string, string>>;
  attempts: ColumnType<number, number | undefined, number>;
  lastError: string | null;
  leaseExpiresAt: Date | null;
  /** A failed attempt's backoff: not taken again before this time (null: ready when no lease holds it). */
  retryAt: Date | null;
  receivedAt: CreatedAt;
  processedAt: Date | null;
  /** The notification request's trace, which the action of its email joins. */
  traceParent: string | null;
}

export type EmailMessageRow = Selectable<EmailMessagesTable>;
export type EmailNotificationRow = Selectable<EmailNotificationsTable>;
