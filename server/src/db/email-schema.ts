import type { ColumnType, Selectable } from 'kysely';
import type { ApprovalMode, CreatedAt, UpdatedAt } from './schema.ts';

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
  /** The user an auto-response runs as. */
  assignedByUserId: string | null;
  createdAt: CreatedAt;
}

export type EmailInboxRow = Selectable<EmailInboxesTable>;
export type EmailInboxAgentRow = Selectable<EmailInboxAgentsTable>;
