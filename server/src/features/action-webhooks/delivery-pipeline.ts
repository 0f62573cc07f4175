import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB, WebhookRow } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { isUniqueViolation, usersRepo } from '../users/users.repo.ts';
import { orgsRepo } from '../orgs/orgs.repo.ts';
import { actionsRepo } from '../actions/actions.repo.ts';
import { deliveriesRepo } from './deliveries.repo.ts';
import type { IngestCache, IngestWebhook } from './ingest-cache.ts';
import { requestToolApprovals, type ActionWebhookPayload } from './payload.ts';
import { isWithinSchedule, nextWindowOpening } from './schedule.ts';

export type BufferReason = 'no_action_rule_configured' | 'action_rule_not_found' | 'action_rule_disabled' | 'user_unresolved' | 'action_create_failed' | 'outside_schedule';

export type Decision =
  | { status: 'skipped'; reason: string }
  | { status: 'buffered'; reason: BufferReason; nextAttemptAt?: Date }
  | { status: 'create'; runAsUserId: string; actionRuleId: string; agentId: string | null; instructions: string | null };

export type Outcome =
  | { status: 'accepted'; eventId: string; actionId: string; alreadyExists: boolean }
  | { status: 'buffered'; eventId: string; reason: string }
  | { status: 'skipped'; eventId: string; reason: string };

/** One delivery as received: everything needed to process it now or again later. */
export interface Ingress {
  eventId: string;
  webhook: WebhookRow;
  payload: ActionWebhookPayload;
  rawBody: string | null;
  headers: Record<string, string>;
  sourceIp: string | null;
  messageId?: string;
}

const isUuid = (value: string) => z.uuid().safeParse(value).success;

export function createDeliveryPipeline(deps: { db: Kysely<DB>; jobs: Pick<JobRunner, 'enqueue'>; cache: IngestCache; clock: Clock }) {
  /** Spec 4.2.1: (a) external user of authProvider, (b) internal user id, (c) the webhook's default; members only. */
  async function resolveRunAsUser(webhook: WebhookRow, payload: ActionWebhookPayload): Promise<string | undefined> {
    const { orgId } = webhook;
    if (payload.userId && payload.authProvider) {
      const user = await usersRepo.findByExternalId(deps.db, payload.authProvider, payload.userId);
      if (user && (await orgsRepo.isMember(deps.db, orgId, user.id))) return user.id;
    }
    if (payload.userId && isUuid(payload.userId) && (await orgsRepo.isMember(deps.db, orgId, payload.userId))) return payload.userId;
    if (webhook.runAsUserId && (await orgsRepo.isMember(deps.db, orgId, webhook.runAsUserId))) return webhook.runAsUserId;
    return undefined;
  }

  return {
    /** What today's configuration says to do with a verified, well-formed delivery. */
    async decide(webhook: IngestWebhook, payload: ActionWebhookPayload): Promise<Decision> {
      const { row } = webhook;
      if (!webhook.matchesEvent(payload.eventType)) return { status: 'skipped', reason: 'event_type_filtered' };
      const now = deps.clock.now();
      if (row.schedule && !isWithinSchedule(row.schedule, now)) {
        return { status: 'buffered', reason: 'outside_schedule', nextAttemptAt: nextWindowOpening(row.schedule, now) };
      }
      const runAsUserId = await resolveRunAsUser(row, payload);
      if (!runAsUserId) return { status: 'buffered', reason: 'user_unresolved' };
      const ruleId = payload.actionRuleId ?? row.actionRuleId;
      if (!ruleId) return { status: 'buffered', reason: 'no_action_rule_configured' };
      const rule = isUuid(ruleId) ? await deps.cache.rule(row.orgId, ruleId) : null;
      if (!rule) return { status: 'buffered', reason: 'action_rule_not_found' };
      if (!rule.enabled) return { status: 'buffered', reason: 'action_rule_disabled' };
      return { status: 'create', runAsUserId, actionRuleId: rule.id, agentId: row.agentId ?? rule.agentId, instructions: payload.instructions ?? null };
    },

    /**
     * Writes the outcome in one transaction: the wh-id (a replay fails here), the delivery row, and
     * for an accepted delivery the action, its first lifecycle event and its job. `existing` is
     * true when the delivery row is already stored (retry, replay).
     */
    async commit(
      ingress: Ingress,
      decision: Decision,
      options: { existing: boolean; attempts?: number; expectedAttempts?: number; nextAttemptAt?: Date | null },
    ): Promise<Outcome> {
      const { webhook, payload, eventId } = ingress;
      const deliveryColumns = {
        eventType: payload.eventType,
        externalId: payload.externalId ?? null,
        payload: JSON.stringify(payload),
      };
      const writeDelivery = async (trx: Kysely<DB>, status: 'accepted' | 'buffered' | 'skipped', reason: string | null, actionId: string | null) => {
        const changes = { status, reason, actionId, nextAttemptAt: status === 'buffered' ? (options.nextAttemptAt ?? null) : null, attempts: options.attempts ?? 1 };
        if (options.existing) {
          // Claims the row: a retry and a replay of one delivery cannot both write (and both create an action).
          if (!(await deliveriesRepo.updateIfAttempts(trx, eventId, options.expectedAttempts ?? 0, changes))) {
            throw new AppError('conflict', 'This delivery is being processed right now');
          }
        } else {
          await deliveriesRepo.insert(trx, {
            id: eventId, orgId: webhook.orgId, webhookId: webhook.id, ...changes, ...deliveryColumns,
            rawBody: ingress.rawBody, headers: JSON.stringify(ingress.headers), verificationScheme: webhook.verificationScheme,
            sourceIp: ingress.sourceIp, messageId: ingress.messageId ?? null,
          });
        }
      };
      const inTransaction = <T>(fn: (trx: Kysely<DB>) => Promise<T>) =>
        deps.db.transaction().execute(async (trx) => {
          if (ingress.messageId && !options.existing) await deliveriesRepo.rememberMessageId(trx, webhook.id, ingress.messageId);
          return fn(trx);
        });

      try {
        if (decision.status !== 'create') {
          await inTransaction((trx) => writeDelivery(trx, decision.status, decision.reason, null));
          return { status: decision.status, eventId, reason: decision.reason };
        }
        return await inTransaction(async (trx) => {
          const action = await actionsRepo.insertIdempotent(trx, {
            id: crypto.randomUUID(), orgId: webhook.orgId, webhookId: webhook.id, deliveryId: eventId, agentId: decision.agentId,
            actionRuleId: decision.actionRuleId, runAsUserId: decision.runAsUserId, eventType: payload.eventType,
            externalId: payload.externalId ?? null, instructions: decision.instructions, data: payload.data ?? {},
            toolApprovals: requestToolApprovals(payload, webhook.allowRequestOverrides),
          });
          // A duplicate on a new request leaves no row of its own; a retried row points at the existing action.
          if (!action.created && !options.existing) return { status: 'accepted' as const, eventId, actionId: action.id, alreadyExists: true };
          await writeDelivery(trx, 'accepted', null, action.id);
          if (action.created) {
            await actionsRepo.insertEvent(trx, { actionId: action.id, orgId: webhook.orgId, status: 'queued', cause: `webhook delivery ${eventId}` });
            await deps.jobs.enqueue('actions.run', { actionId: action.id }, { trx });
          }
          return { status: 'accepted' as const, eventId, actionId: action.id, alreadyExists: !action.created };
        });
      } catch (error) {
        if (error instanceof AppError) throw error;
        if (isUniqueViolation(error, 'webhook_message_ids_pkey')) {
          throw new AppError('message_replayed', 'This wh-id was already received within the last 5 minutes');
        }
        if (decision.status !== 'create') throw error;
        // The action could not be written: keep the delivery, buffered, for a retry or a replay.
        await inTransaction((trx) => writeDelivery(trx, 'buffered', 'action_create_failed', null));
        return { status: 'buffered', eventId, reason: 'action_create_failed' };
      }
    },
  };
}

export type DeliveryPipeline = ReturnType<typeof createDeliveryPipeline>;
