import type { ColumnType, Generated } from 'kysely';
import type { ActionSource, CreatedAt, Json, JsonOf, UpdatedAt } from './schema.ts';

/** Webhooks and their deliveries (schema.ts lists every table in DB). */
export const VERIFICATION_SCHEMES = ['wh', 'hmac_sha256', 'shared_token', 'none'] as const;
export type VerificationScheme = (typeof VERIFICATION_SCHEMES)[number];
export const DELIVERY_STATUSES = ['accepted', 'buffered', 'skipped', 'failed', 'dead_lettered'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface ScheduleWindow {
  days: number[];
  start: string;
  end: string;
}

export interface WebhookSchedule {
  timezone: string;
  windows: ScheduleWindow[];
}

export interface WebhooksTable {
  id: string;
  orgId: string;
  name: string;
  identifier: string;
  actionRuleId: string | null;
  agentId: string | null;
  runAsUserId: string | null;
  eventFilter: JsonOf<string[]>;
  verificationScheme: VerificationScheme;
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretExpiresAt: Date | null;
  rateLimitPerMinute: number;
  allowRequestOverrides: boolean;
  enabled: boolean;
  allowedOrigins: JsonOf<string[]>;
  blockedIps: JsonOf<string[]>;
  maxPayloadBytes: number;
  schedule: JsonOf<WebhookSchedule | null>;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface WebhookDeliveriesTable {
  id: string;
  orgId: string;
  webhookId: string | null;
  actionId: string | null;
  status: DeliveryStatus;
  reason: string | null;
  replayable: Generated<boolean>;
  eventType: string | null;
  externalId: string | null;
  payload: Json;
  rawBody: string | null;
  headers: JsonOf<Record<string, string>>;
  verificationScheme: VerificationScheme;
  sourceIp: string | null;
  messageId: string | null;
  attempts: Generated<number>;
  nextAttemptAt: Date | null;
  lastError: string | null;
  source: ColumnType<ActionSource, ActionSource | undefined, never>;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface WebhookMessageIdsTable {
  webhookId: string;
  messageId: string;
  receivedAt: CreatedAt;
  /** SHA-256 (base64url) of the body first received under this id. */
  bodyDigest: string | null;
  eventId: string | null;
  externalId: string | null;
}
