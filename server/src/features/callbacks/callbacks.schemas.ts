import { z } from 'zod';
import { CALLBACK_DELIVERY_STATUSES, CALLBACK_EVENT_TYPES, DECISION_CHANNELS } from '../../db/schema.ts';
import { instantSchema } from '../../lib/instants.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import { patchSchema } from '../../lib/patch-schema.ts';
import { orgParams } from '../../lib/http-schemas.ts';

const eventTypes = z
  .array(z.enum(CALLBACK_EVENT_TYPES))
  .min(1)
  .max(CALLBACK_EVENT_TYPES.length)
  .transform((events) => [...new Set(events)])
  .describe('Any mix of the six action.* event types');

export const callbackEndpointInput = z.object({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000),
  description: z.string().trim().max(500).default(''),
  events: eventTypes.default([...CALLBACK_EVENT_TYPES]),
  enabled: z.boolean().default(true),
});
export type CallbackEndpointInput = z.output<typeof callbackEndpointInput>;
export const callbackEndpointPatch = patchSchema(callbackEndpointInput);
export type CallbackEndpointPatch = z.output<typeof callbackEndpointPatch>;

export const callbackEndpointSchema = z.object({
  id: z.uuid(),
  webhookId: z.uuid(),
  url: z.string(),
  description: z.string(),
  events: z.array(z.enum(CALLBACK_EVENT_TYPES)),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('Why the endpoint was disabled: by a user, 410 Gone, or failing for 5 days'),
  disabledAt: z.date().nullable(),
  failingSince: z.date().nullable().describe('First failed attempt since the last success'),
  createdAt: z.date(),
  updatedAt: z.date(),
});

export const callbackEndpointCreated = z.object({
  callback: callbackEndpointSchema,
  secret: z.string().describe('whsec_...: shown only here and on rotate-secret'),
});
export const callbackSecretRotated = z.object({
  secret: z.string(),
  previousSecretExpiresAt: z.date().describe('Until then callbacks carry signatures with both secrets'),
});

export const webhookCallbacksParams = orgParams.extend({ webhookId: z.uuid() });
export const callbackParams = webhookCallbacksParams.extend({ callbackId: z.uuid() });
export const deliveryParams = orgParams.extend({ deliveryId: z.uuid() });

export const callbackAttemptSchema = z.object({
  attemptedAt: z.date(),
  durationMs: z.int(),
  statusCode: z.int().nullable(),
  error: z.string().nullable(),
  responseBody: z.string().nullable().describe('The first 1 KiB of the answer'),
});

const actionIdentity = {
  actionId: z.uuid(),
  webhookId: z.uuid(),
  webhookIdentifier: z.string(),
  eventId: z.uuid().describe('The webhook event (delivery) that created the action'),
  externalId: z.string().nullable(),
  eventType: z.string(),
  agentVersion: z.int().nullable().optional().describe("The agent's version the action runs with (null: it has no agent)"),
};
const stagedToolCall = z.object({
  toolCallId: z.string(),
  toolName: z.string(),
  input: z.unknown(),
  expiresAt: z.string().nullable(),
});
const decision = z.object({
  toolCallId: z.string(),
  toolName: z.string(),
  decidedBy: z.uuid().nullable().describe('null when the deadline decided'),
  approverId: z.uuid().nullable().describe('The person who decided (as decidedBy); null when the deadline decided'),
  channel: z
    .enum(DECISION_CHANNELS)
    .nullable()
    .describe('How: console, api, email_link, email_reply or slack; null when the deadline decided'),
  decidedAt: z.string().nullable(),
  reason: z.string().nullable(),
  kind: z
    .enum(['approve', 'reject', 'expire', 'send_back'])
    .nullable()
    .optional()
    .describe('What was decided: `send_back` (with action.approved) is a call not run, its message given to the agent'),
  argumentsEdited: z.boolean().optional().describe("Approved with other arguments than the model's (the ledger has both)"),
});
const envelope = <Type extends string, Status extends string, Data extends z.ZodRawShape>(
  type: Type,
  status: Status,
  data: Data,
) =>
  z.object({
    type: z.literal(type),
    timestamp: z.string().describe('ISO time of the transition'),
    data: z.object({ ...actionIdentity, status: z.literal(status), ...data }),
  });

/** The body of a callback: the SDK's CallbackEvent type describes the same. */
export const callbackEventSchema = z
  .discriminatedUnion('type', [
    envelope('action.pending_approval', 'pending_approval', {
      toolCall: stagedToolCall.describe('The (first) staged call'),
      toolCalls: z.array(stagedToolCall),
      reason: z
        .string()
        .optional()
        .describe('Set when the run waits for another reason than its tool calls\' modes: "budget exceeded"'),
    }),
    envelope('action.approved', 'approved', { decision }),
    envelope('action.completed', 'completed', { result: z.unknown() }),
    envelope('action.failed', 'failed', { error: z.string().describe('Why it failed') }),
    envelope('action.rejected', 'rejected', { decision }),
    envelope('action.expired', 'expired', { decision }),
  ])
  .meta({
    id: 'CallbackEvent',
    description:
      'POSTed as JSON to each subscribed endpoint, signed with the Standard Webhooks scheme: webhook-id (stable across ' +
      'retries), webhook-timestamp, webhook-signature, and the same under wh-*.',
  });

export type CallbackEvent = z.infer<typeof callbackEventSchema>;

export const callbackDeliverySchema = z.object({
  id: z.uuid().describe('Also the webhook-id header: the same on every attempt'),
  callbackId: z.uuid(),
  url: z.string(),
  actionId: z.uuid(),
  eventType: z.enum(CALLBACK_EVENT_TYPES),
  status: z.enum(CALLBACK_DELIVERY_STATUSES),
  attemptCount: z.int().describe('Attempts in the current round (a replay starts a new one)'),
  nextAttemptAt: z.date().nullable(),
  lastStatusCode: z.int().nullable(),
  lastError: z.string().nullable(),
  payload: callbackEventSchema,
  createdAt: z.date(),
  updatedAt: z.date(),
  attempts: z.array(callbackAttemptSchema),
});

export const callbackListQuery = paginationQuery.extend({ status: z.enum(CALLBACK_DELIVERY_STATUSES).optional() });
export const recoverBody = z.object({
  since: instantSchema.describe('Re-send failed and dead-lettered deliveries created since then'),
});
