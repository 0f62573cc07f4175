import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Json, JsonOf, UpdatedAt } from './schema.ts';

/** Callbacks to the customer's endpoints (schema.ts lists every table in DB). */
export const CALLBACK_EVENT_TYPES = [
  'action.pending_approval',
  'action.approved',
  'action.completed',
  'action.failed',
  'action.rejected',
  'action.expired',
] as const;
export type CallbackEventType = (typeof CALLBACK_EVENT_TYPES)[number];
export const CALLBACK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'dead_lettered'] as const;
export type CallbackDeliveryStatus = (typeof CALLBACK_DELIVERY_STATUSES)[number];

export interface CallbackEndpointsTable {
  id: string;
  orgId: string;
  webhookId: string;
  url: string;
  description: Generated<string>;
  events: JsonOf<CallbackEventType[]>;
  enabled: Generated<boolean>;
  disabledReason: string | null;
  disabledAt: Date | null;
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
}

export interface CallbackDeliveriesTable {
  id: string;
  seq: ColumnType<number, never, never>;
  orgId: string;
  endpointId: string;
  actionId: string;
  eventType: CallbackEventType;
  payload: Json;
  status: Generated<CallbackDeliveryStatus>;
  attemptCount: Generated<number>;
  nextAttemptAt: Generated<Date>;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: CreatedAt;
  updatedAt: UpdatedAt;
  /** The action's trace, which each attempt's span joins. */
  traceParent: string | null;
}

export interface CallbackAttemptsTable {
  id: string;
  deliveryId: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
}
