import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type {
  EmailAttachmentsTable,
  EmailDeliveryEventsTable,
  EmailInboxAgentsTable,
  EmailInboxesTable,
  EmailIntegrationsTable,
  EmailMessagesTable,
  EmailNotificationsTable,
  EmailSuppressionsTable,
} from './email-schema.ts';
import type { CallbackAttemptsTable, CallbackDeliveriesTable, CallbackEndpointsTable } from './callback-schema.ts';
import type { McpServersTable } from './mcp-schema.ts';
import type { ArgumentRule, ToolCallsTable, UserToolPreferencesTable } from './tool-call-schema.ts';
import type { ApprovalAttemptsTable, ToolCallApprovalsTable } from './tool-call-schema.ts';
import type { WebhookDeliveriesTable, WebhookMessageIdsTable, WebhooksTable } from './webhook-schema.ts';
import type {
  ApprovalLinksTable,
  ApprovalNotificationsTable,
  ApprovalRepliesTable,
  SlackIntegrationsTable,
  SlackInteractionsSeenTable,
  ApproversColumn,
  NotifyChannel,
  NotifyColumn,
} from './approval-schema.ts';
import type { BudgetColumn, BudgetSpendTable, ModelCallsTable } from './usage-schema.ts';
import type { AgentPublicationsTable, AgentsTable, AgentVersionsTable } from './agent-schema.ts';
import type { ExperimentResultsTable, ExperimentsTable } from './experiment-schema.ts';
import type { JobLeasesTable } from './job-schema.ts';

export type * from './agent-schema.ts';
export * from './experiment-schema.ts';
export * from './approval-schema.ts';
export * from './callback-schema.ts';
export type * from './mcp-schema.ts';
export * from './tool-call-schema.ts';
export * from './webhook-schema.ts';
export * from './usage-schema.ts';

/** Kysely's view of the tables (camelCase in TypeScript, snake_case in SQL via CamelCasePlugin). */
export type CreatedAt = ColumnType<Date, Date | undefined, never>;
export type UpdatedAt = ColumnType<Date, Date | undefined, Date>;

export type UserRole = 'Admin' | 'Guest';

export interface OrganizationsTable {
  id: string;
  slug: string;
  name: string;
  budget: BudgetColumn;
  createdAt: CreatedAt;
}

export interface UsersTable {
  id: string;
  email: string;
  username: string;
  firstName: string | null;
  lastName: string | null;
  role: UserRole;
  provider: string;
  passwordHash: string | null;
  codehostId: string | null;
  idpId: string | null;
  externalProvider: string | null;
  externalUserId: string | null;
  externalTokenEncrypted: string | null;
  /** Whether they receive approval emails (their own choice; default yes). */
  approvalEmails: Generated<boolean>;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface MembershipsTable {
  orgId: string;
  userId: string;
  createdAt: CreatedAt;
}

export interface SessionsTable {
  id: string;
  tokenHash: string;
  userId: string;
  expiresAt: Date;
  createdAt: CreatedAt;
  ipAddress: string | null;
  userAgent: string | null;
}

export interface PasswordResetTokensTable {
  id: string;
  userId: string;
  tokenHash: string;
  expiresAt: Date;
  usedAt: Date | null;
  createdAt: CreatedAt;
}

export interface ThreadsTable {
  id: string;
  orgId: string | null;
  /** Null for an email thread: it belongs to its org. */
  userId: string | null;
  channel: string;
  title: string;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

// The closed sets stored in text columns: each written once here, its type derived, and the API's
// enums built from the same arrays.
export const APPROVAL_MODES = ['allow', 'ask', 'agent'] as const;
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
export const MODEL_PROVIDERS = ['openai-compatible', 'openai', 'anthropic'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];
export const ACTION_STATUSES = [
  'queued',
  'running',
  'pending_approval',
  'approved',
  'completed',
  'failed',
  'rejected',
  'expired',
] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];
export type Json = ColumnType<unknown, string | null | undefined, string | null>;
export type JsonOf<T> = ColumnType<T, string, string>;

export interface ActionRulesTable {
  id: string;
  orgId: string;
  name: string;
  agentId: string | null;
  instructions: string;
  enabled: boolean;
  approvalRules: JsonOf<Record<string, ApprovalMode>>;
  argumentRules: ColumnType<ArgumentRule[], string | undefined, string>;
  approvalTimeoutSeconds: Generated<number>;
  approvers: ApproversColumn;
  /** How many distinct approvers must approve a call before it runs (1 to 5). */
  minApprovals: Generated<number>;
  notify: NotifyColumn;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface ActionsTable {
  id: string;
  orgId: string;
  webhookId: string | null;
  deliveryId: string;
  agentId: string | null;
  /** The agent's version live when the action was created: it runs with it for its whole life. */
  agentVersion: number | null;
  actionRuleId: string | null;
  runAsUserId: string | null;
  status: ActionStatus;
  approvalState: Generated<string>;
  eventType: string;
  externalId: string | null;
  instructions: string | null;
  data: JsonOf<Record<string, unknown>>;
  toolApprovals: JsonOf<Record<string, ApprovalMode>>;
  result: Json;
  error: string | null;
  threadId: string | null;
  leaseExpiresAt: Date | null;
  /** Runs of it taken over after their runner died (lease lapsed); see MAX_TAKEOVERS. */
  takeovers: Generated<number>;
  /** Set by each claim for a run (claimRunnable): the run holding it now keeps this one. */
  runToken: Generated<string | null>;
  /** What created it: a webhook delivery, or an email to an inbox (then emailMessageId names it). */
  source: ColumnType<ActionSource, ActionSource | undefined, never>;
  emailMessageId: string | null;
  /** An email's: its inbox assignment's approval modes, argument rules and notify as it came (null: a webhook's rule says). */
  approvalRules: ColumnType<Record<string, ApprovalMode> | null, string | null | undefined, string | null>;
  argumentRules: ColumnType<ArgumentRule[] | null, string | null | undefined, string | null>;
  notify: ColumnType<NotifyChannel[] | null, string | null | undefined, string | null>;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
  /** Where the action's trace continues (W3C traceparent), when tracing is on. */
  traceParent: string | null;
}

export const ACTION_SOURCES = ['webhook', 'email'] as const;
export type ActionSource = (typeof ACTION_SOURCES)[number];

export interface OrgModelCredentialsTable {
  orgId: string;
  provider: ModelProvider;
  apiKeyEncrypted: string;
  apiKeyHint: string;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface ThreadMessagesTable {
  id: string;
  threadId: string;
  seq: number;
  role: 'user' | 'assistant' | 'tool';
  content: JsonOf<unknown>;
  actionId: string | null;
  createdAt: CreatedAt;
}

export interface ActionEventsTable {
  id: string;
  actionId: string;
  orgId: string;
  status: string;
  cause: string;
  data: Json;
  createdAt: CreatedAt;
}

export interface UserModelUsageTable {
  userId: string;
  /** The reset date (ISO) that names the window, or 'all-time'. */
  windowKey: string;
  messages: Generated<number>;
  updatedAt: UpdatedAt;
}

export interface DocumentsTable {
  id: string;
  orgId: string;
  title: string;
  contentMarkdown: string;
  pdf: Uint8Array;
  sizeBytes: number;
  createdByUserId: string | null;
  actionId: string | null;
  toolCallId: string | null;
  createdAt: CreatedAt;
}

export interface DB {
  organizations: OrganizationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  sessions: SessionsTable;
  passwordResetTokens: PasswordResetTokensTable;
  threads: ThreadsTable;
  agents: AgentsTable;
  agentVersions: AgentVersionsTable;
  agentPublications: AgentPublicationsTable;
  experiments: ExperimentsTable;
  experimentResults: ExperimentResultsTable;
  actionRules: ActionRulesTable;
  webhooks: WebhooksTable;
  actions: ActionsTable;
  actionEvents: ActionEventsTable;
  webhookDeliveries: WebhookDeliveriesTable;
  webhookMessageIds: WebhookMessageIdsTable;
  userModelUsage: UserModelUsageTable;
  documents: DocumentsTable;
  orgModelCredentials: OrgModelCredentialsTable;
  threadMessages: ThreadMessagesTable;
  toolCalls: ToolCallsTable;
  userToolPreferences: UserToolPreferencesTable;
  callbackEndpoints: CallbackEndpointsTable;
  callbackDeliveries: CallbackDeliveriesTable;
  callbackAttempts: CallbackAttemptsTable;
  emailIntegrations: EmailIntegrationsTable;
  emailInboxes: EmailInboxesTable;
  emailInboxAgents: EmailInboxAgentsTable;
  emailMessages: EmailMessagesTable;
  emailAttachments: EmailAttachmentsTable;
  emailDeliveryEvents: EmailDeliveryEventsTable;
  emailSuppressions: EmailSuppressionsTable;
  emailNotifications: EmailNotificationsTable;
  mcpServers: McpServersTable;
  approvalAttempts: ApprovalAttemptsTable;
  toolCallApprovals: ToolCallApprovalsTable;
  approvalNotifications: ApprovalNotificationsTable;
  approvalLinks: ApprovalLinksTable;
  approvalReplies: ApprovalRepliesTable;
  slackIntegrations: SlackIntegrationsTable;
  slackInteractionsSeen: SlackInteractionsSeenTable;
  modelCalls: ModelCallsTable;
  budgetSpend: BudgetSpendTable;
  jobLeases: JobLeasesTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type OrganizationRow = Selectable<OrganizationsTable>;
export type SessionRow = Selectable<SessionsTable>;
export type ThreadRow = Selectable<ThreadsTable>;
export type ActionRuleRow = Selectable<ActionRulesTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type ToolCallRow = Selectable<ToolCallsTable>;
export type ThreadMessageRow = Selectable<ThreadMessagesTable>;
export type CallbackEndpointRow = Selectable<CallbackEndpointsTable>;
export type { Generated };
