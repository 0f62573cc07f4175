import { z } from 'zod';
import {
  ACTION_SOURCES,
  ACTION_STATUSES,
  APPROVAL_NOTIFICATION_STATUSES,
  DECISION_CHANNELS,
  DELIVERY_STATUSES,
  NOTIFY_CHANNELS,
} from '../../db/schema.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import { callbackDeliverySchema } from '../callbacks/callbacks.schemas.ts';
import { usageTotalsSchema } from '../usage/usage.schemas.ts';
import { approvalRecordSchema } from '../approvals/approvals.schemas.ts';

/** One row of the ledger: an action, or a delivery that has not (yet) made one. */
export const ledgerRow = z.object({
  id: z.uuid(),
  kind: z.enum(['action', 'delivery']),
  source: z
    .enum(ACTION_SOURCES)
    .meta({ description: 'webhook: an action webhook delivery; email: an email received at an inbox' }),
  eventId: z.uuid(),
  actionId: z.uuid().nullable(),
  webhookId: z.uuid().nullable(),
  eventType: z.string().nullable(),
  externalId: z.string().nullable(),
  status: z.string(),
  deliveryStatus: z.string(),
  reason: z
    .string()
    .nullable()
    .meta({
      description:
        'Why a delivery did not make an action, or why an action failed, was rejected or expired (its error, or the ' +
        "decision's cause and reason)",
    }),
  approvalState: z.string().nullable(),
  agentVersion: z
    .int()
    .nullable()
    .meta({ description: "The agent's version the action runs with: the one live when it was created (null: no agent)" }),
  agentLiveVersion: z
    .int()
    .nullable()
    .meta({ description: "The agent's version live now, for comparison (null: no agent, or it was deleted)" }),
  replayable: z.boolean(),
  attempts: z.int(),
  nextAttemptAt: z.date().nullable(),
  createdAt: z.date(),
  summary: z.string(),
});
/** A row with everything an operator sees: payload, headers, lifecycle, execution, callbacks. */
export const ledgerDetail = ledgerRow.extend({
  ingressPayload: z.unknown(),
  rawBody: z.string().nullable(),
  headers: z.record(z.string(), z.string()),
  verificationScheme: z.string(),
  sourceIp: z.string().nullable(),
  lifecycleEvents: z.array(z.object({ status: z.string(), cause: z.string(), data: z.unknown(), at: z.date() })),
  execution: z
    .object({
      runAsUserId: z.uuid().nullable(),
      agentId: z.uuid().nullable(),
      actionRuleId: z.uuid().nullable(),
      toolApprovals: z.record(z.string(), z.string()),
      result: z.unknown(),
      error: z.string().nullable(),
      threadId: z.uuid().nullable(),
      usage: usageTotalsSchema
        .extend({
          modelCalls: z.array(
            z.object({
              provider: z.string(),
              model: z.string(),
              inputTokens: z.int(),
              outputTokens: z.int(),
              cachedInputTokens: z.int(),
              costUsd: z.number().nullable(),
              durationMs: z.int(),
              createdAt: z.date(),
            }),
          ),
        })
        .meta({
          description:
            "The totals of all the action's model calls (tokens, cost (null: no price), time) and the first 500 of them",
        }),
      conversation: z.array(z.object({ seq: z.int(), role: z.string(), content: z.unknown(), createdAt: z.date() })).meta({
        description: "The action's run as the model saw it: the event, the agent's steps, tool calls and results (at most 200)",
      }),
      toolCalls: z.array(
        z.object({
          toolCallId: z.string(),
          toolName: z.string(),
          mode: z.string(),
          status: z.string(),
          approval: z.string(),
          input: z.unknown().meta({ description: "The model's arguments" }),
          approvedInput: z.unknown().meta({
            description: "The arguments a person approved in place of the model's, which it ran with (null: not edited)",
          }),
          output: z.unknown(),
          requestedAt: z.date(),
          expiresAt: z.date().nullable(),
          decidedBy: z.uuid().nullable(),
          approverId: z
            .uuid()
            .nullable()
            .meta({ description: 'Who decided it (the same as decidedBy; null: undecided, or the deadline)' }),
          decidedAt: z.date().nullable(),
          reason: z.string().nullable(),
          completedAt: z.date().nullable(),
          modeSource: z.unknown().meta({
            description:
              'What decided the mode: `{ source: preference | override | rule | default }`, or `{ source: ' +
              "argument_rule, index, rule }` for the argument rule (the action rule's, or its inbox's) that made it stricter",
          }),
          channel: z.enum(DECISION_CHANNELS).nullable().meta({
            description:
              'How a person decided the call: console, api, email_link, email_reply, slack (null: undecided, or the deadline)',
          }),
          approverExternalId: z
            .string()
            .nullable()
            .meta({ description: 'Who decided, as the channel knows them: the Slack user id of a decision in Slack' }),
          approvalsRequired: z
            .number()
            .int()
            .nullable()
            .meta({ description: "How many distinct approvers it needs (the rule's minApprovals; null: it needed none)" }),
          approvals: z.array(approvalRecordSchema.extend({ superseded: z.boolean() })).meta({
            description:
              'Each approval, oldest first; superseded: an approver after it changed the arguments, and the approvals ' +
              'started again',
          }),
          refusedAttempts: z
            .array(
              z.object({
                channel: z.enum(DECISION_CHANNELS),
                userId: z.uuid().nullable(),
                externalUserId: z.string().nullable().meta({ description: 'Who tried, as Slack knows them' }),
                reason: z.string(),
                at: z.date(),
              }),
            )
            .meta({
              description: 'Attempts to decide that changed nothing (decided already, and later a used link or the wrong sender)',
            }),
          notifications: z
            .array(
              z.object({
                userId: z.uuid().nullable(),
                address: z.string().nullable(),
                channel: z.enum(NOTIFY_CHANNELS),
                status: z.enum(APPROVAL_NOTIFICATION_STATUSES),
                reason: z.string().nullable(),
                at: z.date(),
              }),
            )
            .meta({
              description:
                'Whom the rule asked to decide, when and how they were told (`sent`), or why not (`not_sent`, ' +
                '`failed`: the reason says why)',
            }),
          stagedReason: z
            .string()
            .nullable()
            .meta({ description: 'Why the call waits for a human other than its mode (an interrupted call)' }),
          startedAt: z
            .date()
            .nullable()
            .meta({ description: 'When the request of a call that may not be repeated left (recorded before it left)' }),
        }),
      ),
    })
    .nullable(),
  callbacks: z.array(callbackDeliverySchema),
});
export const ledgerQuery = paginationQuery.extend({
  kind: z.enum(['action', 'delivery']).optional(),
  source: z.enum(ACTION_SOURCES).optional(),
  status: z
    .enum([...new Set([...ACTION_STATUSES, ...DELIVERY_STATUSES])])
    .optional()
    .meta({ description: "An action's status, or the status of a delivery that made no action" }),
  webhookId: z.uuid().optional(),
  eventType: z.string().max(200).optional(),
  q: z.string().min(1).max(200).optional(),
});
