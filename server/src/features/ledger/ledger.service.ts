import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { notFound } from '../../lib/errors.ts';
import { decodeCursor, encodeCursor } from '../../lib/pagination.ts';
import { actionsRepo } from '../actions/actions.repo.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import { approvalsRepo } from '../approvals/approvals.repo.ts';
import { decisionRuleOf } from '../approvals/approvers.repo.ts';
import { standingApproval } from '../approvals/standing-approvals.ts';
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
  const summary =
    kind === 'action' ? `${what}: action ${status}` : `${what}: ${row.deliveryStatus}${row.reason ? `, ${row.reason}` : ''}`;
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
    agentVersion: row.agentVersion ?? null,
    agentLiveVersion: row.agentLiveVersion ?? null,
    replayable:
      row.source === 'webhook' && row.deliveryStatus !== 'accepted' && (row.deliveryStatus !== 'failed' || row.replayable),
    attempts: row.attempts,
    nextAttemptAt: row.nextAttemptAt,
    createdAt: row.createdAt,
    summary,
  };
}

type FoundRow = NonNullable<Awaited<ReturnType<typeof ledgerRepo.find>>>;
type ToolCallRow = Awaited<ReturnType<typeof toolCallsRepo.forAction>>[number];
/** What is on record of the decisions on an action's calls. */
interface DecisionRecord {
  attempts: Awaited<ReturnType<typeof approvalsRepo.attemptsForAction>>;
  approvals: Awaited<ReturnType<typeof approvalsRepo.approvalsOf>>;
  notifications: Awaited<ReturnType<typeof ledgerRepo.approvalNotifications>>;
  approvalsRequired: number;
}

/** The row's lifecycle: its transitions after its first state, the action's creation (queued by what created it). */
function lifecycleOf(row: FoundRow, transitions: Awaited<ReturnType<typeof actionsRepo.events>>) {
  const created =
    row.actionId && row.actionCreatedAt
      ? [
          {
            status: 'queued',
            cause: row.source === 'email' ? `email ${row.externalId} received` : `webhook delivery ${row.actionDeliveryId}`,
            data: null,
            createdAt: row.actionCreatedAt,
          },
        ]
      : [];
  return [...created, ...transitions].map((event) => ({
    status: event.status,
    cause: event.cause,
    data: event.data ?? null,
    at: event.createdAt,
  }));
}

/** One tool call as the ledger shows it: what it was, how its mode was decided, who decided, who was told. */
function toolCallOf(call: ToolCallRow, { attempts, approvals, notifications, approvalsRequired }: DecisionRecord) {
  return {
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    mode: call.mode,
    status: call.status,
    approval: call.approval,
    input: call.input,
    approvedInput: call.approvedInput ?? null,
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
    approverExternalId: call.decidedByExternalId ?? null,
    approvalsRequired: call.approval === 'not_required' ? null : approvalsRequired,
    approvals: approvals
      .filter((approval) => approval.toolCallId === call.id)
      .map((approval) => ({ ...standingApproval(approval), superseded: approval.supersededAt !== null })),
    refusedAttempts: attempts
      .filter((attempt) => attempt.toolCallId === call.id)
      .map(({ channel, userId, externalUserId, reason, createdAt }) => ({
        channel,
        userId,
        externalUserId: externalUserId ?? null,
        reason,
        at: createdAt,
      })),
    notifications: notifications
      .filter((notification) => notification.toolCallId === call.id)
      .map(({ userId, address, channel, status, reason, updatedAt }) => ({
        userId,
        address,
        channel,
        status,
        reason,
        at: updatedAt,
      })),
    stagedReason: call.stagedReason,
    startedAt: call.startedAt,
  };
}

export function createLedgerService(deps: { db: Kysely<DB>; callbacks: Pick<CallbacksService, 'forAction'> }) {
  const { db } = deps;

  /** What an action did: its run's conversation, tool calls, usage; read together. */
  async function executionOf(orgId: string, row: FoundRow & { actionId: string }) {
    const [toolCalls, conversation, attempts, notifications, usage] = await Promise.all([
      toolCallsRepo.forAction(db, row.actionId),
      row.threadId ? threadsRepo.messagesOfAction(db, row.threadId, row.actionId, CONVERSATION_LIMIT) : [],
      approvalsRepo.attemptsForAction(db, row.actionId),
      ledgerRepo.approvalNotifications(db, row.actionId),
      usageRepo.forAction(db, orgId, row.actionId),
    ]);
    const approvals = await approvalsRepo.approvalsOf(
      db,
      toolCalls.map((call) => call.id),
    );
    const approvalsRequired = (await decisionRuleOf(db, orgId, row.actionId))?.minApprovals ?? 1;
    const record = { attempts, approvals, notifications, approvalsRequired };
    return {
      runAsUserId: row.runAsUserId,
      agentId: row.agentId,
      actionRuleId: row.actionRuleId,
      toolApprovals: row.toolApprovals ?? {},
      result: row.result ?? null,
      error: row.error,
      threadId: row.threadId,
      usage,
      conversation: conversation.map(({ seq, role, content, createdAt }) => ({ seq, role, content, createdAt })),
      toolCalls: toolCalls.map((call) => toolCallOf(call, record)),
    };
  }

  return {
    async list(orgId: string, query: LedgerFilters & { limit: number; cursor?: string }) {
      const rows = await ledgerRepo.list(db, orgId, query, query.limit, decodeCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return {
        rows: page.map(summarize),
        nextCursor: rows.length > query.limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.eventId }) : null,
      };
    },

    async get(orgId: string, id: string) {
      const row = await ledgerRepo.find(db, orgId, id);
      if (!row) throw notFound('Ledger row');
      const { actionId } = row;
      const [transitions, callbacks, execution] = actionId
        ? await Promise.all([
            actionsRepo.events(db, actionId),
            deps.callbacks.forAction(orgId, actionId),
            executionOf(orgId, { ...row, actionId }),
          ])
        : [[], [], null];
      return {
        ...summarize(row),
        ingressPayload: row.payload ?? null,
        rawBody: row.rawBody,
        headers: row.headers,
        verificationScheme: row.verificationScheme,
        sourceIp: row.sourceIp,
        lifecycleEvents: lifecycleOf(row, transitions),
        execution,
        // Outbound callbacks, in lifecycle order, with their attempts.
        callbacks,
      };
    },
  };
}

export type LedgerService = ReturnType<typeof createLedgerService>;
