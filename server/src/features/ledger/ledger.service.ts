import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { notFound } from '../../lib/errors.ts';
import { decodeCursor, encodeCursor } from '../../lib/pagination.ts';
import { actionsRepo } from '../actions/actions.repo.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import { threadsRepo } from '../threads/threads.repo.ts';
import { usageRepo } from '../usage/usage.repo.ts';
import type { CallbacksService } from '../callbacks/callbacks.service.ts';
import { ledgerRepo, type LedgerFilters } from './ledger.repo.ts';

/** Messages of a run shown with its ledger row; a longer run shows its first ones. */
const CONVERSATION_LIMIT = 200;

type ListedRow = Awaited<ReturnType<typeof ledgerRepo.list>>[number];

function summarize(row: ListedRow) {
  const kind = row.actionId ? ('action' as const) : ('delivery' as const);
  const status = row.actionStatus ?? row.deliveryStatus;
  const what = `${row.eventType ?? 'unparsed event'}${row.externalId ? ` (${row.externalId})` : ''}`;
  const summary = kind === 'action' ? `${what}: action ${status}` : `${what}: ${row.deliveryStatus}${row.reason ? `, ${row.reason}` : ''}`;
  return {
    id: row.actionId ?? row.eventId,
    kind,
    source: row.source,
    eventId: row.eventId,
    actionId: row.actionId,
    webhookId: row.webhookId,
    eventType: row.eventType,
    externalId: row.externalId,
    status,
    deliveryStatus: row.deliveryStatus,
    reason: row.actionReason ?? row.reason,
    approvalState: row.approvalState ?? null,
    replayable: row.source === 'webhook' && row.deliveryStatus !== 'accepted' && (row.deliveryStatus !== 'failed' || row.replayable),
    attempts: row.attempts,
    nextAttemptAt: row.nextAttemptAt,
    createdAt: row.createdAt,
    summary,
  };
}

export function createLedgerService(deps: { db: Kysely<DB>; callbacks: Pick<CallbacksService, 'forAction'> }) {
  return {
    async list(orgId: string, query: LedgerFilters & { limit: number; cursor?: string }) {
      const rows = await ledgerRepo.list(deps.db, orgId, query, query.limit, decodeCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return {
        rows: page.map(summarize),
        nextCursor: rows.length > query.limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.eventId }) : null,
      };
    },

    async get(orgId: string, id: string) {
      const row = await ledgerRepo.find(deps.db, orgId, id);
      if (!row) throw notFound('Ledger row');
      const [transitions, toolCalls, callbacks, conversation, attempts, notifications, usage] = row.actionId
        ? await Promise.all([
            actionsRepo.events(deps.db, row.actionId),
            toolCallsRepo.forAction(deps.db, row.actionId),
            deps.callbacks.forAction(orgId, row.actionId),
            row.threadId ? threadsRepo.messagesOfAction(deps.db, row.threadId, row.actionId, CONVERSATION_LIMIT) : [],
            toolCallsRepo.attemptsForAction(deps.db, row.actionId),
            ledgerRepo.approvalNotifications(deps.db, row.actionId),
            usageRepo.forAction(deps.db, orgId, row.actionId),
          ])
        : [[], [], [], [], [], [], null];
      // The first state is the action's creation: queued by the delivery that created it.
      const lifecycle =
        row.actionId && row.actionCreatedAt
          ? [
              {
                status: 'queued',
                cause: row.source === 'email' ? `email ${row.externalId} received` : `webhook delivery ${row.actionDeliveryId}`,
                data: null,
                createdAt: row.actionCreatedAt,
              },
              ...transitions,
            ]
          : transitions;
      return {
        ...summarize(row),
        ingressPayload: row.payload ?? null,
        rawBody: row.rawBody,
        headers: row.headers,
        verificationScheme: row.verificationScheme,
        sourceIp: row.sourceIp,
        lifecycleEvents: lifecycle.map((event) => ({
          status: event.status,
          cause: event.cause,
          data: event.data ?? null,
          at: event.createdAt,
        })),
        execution: row.actionId
          ? {
              runAsUserId: row.runAsUserId,
              agentId: row.agentId,
              actionRuleId: row.actionRuleId,
              toolApprovals: row.toolApprovals ?? {},
              result: row.result ?? null,
              error: row.error,
              threadId: row.threadId,
              // Read with the rest whenever the row is an action's.
              usage: usage!,
              conversation: conversation.map((message) => ({
                seq: message.seq,
                role: message.role,
                content: message.content,
                createdAt: message.createdAt,
              })),
              toolCalls: toolCalls.map((call) => ({
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                mode: call.mode,
                status: call.status,
                approval: call.approval,
                input: call.input,
                output: call.output ?? null,
                requestedAt: call.requestedAt,
                expiresAt: call.expiresAt,
                decidedBy: call.decidedByUserId,
                approverId: call.decidedByUserId,
                decidedAt: call.decidedAt,
                reason: call.decisionReason,
                completedAt: call.completedAt,
                modeSource: call.modeSource ?? null,
                channel: call.decisionChannel,
                refusedAttempts: attempts
                  .filter((attempt) => attempt.toolCallId === call.id)
                  .map((attempt) => ({ channel: attempt.channel, userId: attempt.userId, reason: attempt.reason, at: attempt.createdAt })),
                notifications: notifications
                  .filter((notification) => notification.toolCallId === call.id)
                  .map((notification) => ({
                    userId: notification.userId,
                    address: notification.address,
                    channel: notification.channel,
                    status: notification.status,
                    reason: notification.reason,
                    at: notification.updatedAt,
                  })),
                stagedReason: call.stagedReason,
                startedAt: call.startedAt,
              })),
            }
          : null,
        // Outbound callbacks, in lifecycle order, with their attempts.
        callbacks,
      };
    },
  };
}

export type LedgerService = ReturnType<typeof createLedgerService>;
