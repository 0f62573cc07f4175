import type { Selectable } from 'kysely';
import type { CreatedAt, UpdatedAt } from './schema.ts';

/** The email side's tables (the rest are in schema.ts, which lists them all in DB). */
export interface EmailIntegrationsTable {
  orgId: string;
  apiKeyEncrypted: string;
  apiKeyHint: string;
  webhookSecretEncrypted: string;
  webhookSecretHint: string;
  fromEmail: string;
  fromName: string | null;
  /** The domain of fromEmail, lower-cased. */
  domain: string;
  /** The provider's status of that domain when last checked (verified, pending, ...); null: never checked. */
  domainStatus: string | null;
  domainReceiving: boolean | null;
  domainCheckedAt: Date | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export type EmailIntegrationRow = Selectable<EmailIntegrationsTable>;
