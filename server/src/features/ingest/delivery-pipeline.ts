import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB, WebhookRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { usersRepo } from '../users/users.repo.ts';
import type { IngestCache, IngestWebhook } from './ingest-cache.ts';
import type { ActionWebhookPayload } from './payload.ts';
import { isWithinSchedule, nextWindowOpening } from './schedule.ts';

export type BufferReason =
  | 'no_action_rule_configured'
  | 'action_rule_not_found'
  | 'action_rule_disabled'
  | 'user_unresolved'
  | 'action_create_failed'
  | 'outside_schedule';

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
  /** SHA-256 (base64url) of the raw body, when it came with a message id: a retry must match it. */
  bodyDigest?: string;
  /** The ingest request's trace, which the action joins (tracing on). */
  traceParent?: string | null;
}

const uuidSchema = z.uuid();
const isUuid = (value: string) => uuidSchema.safeParse(value).success;

export function createDeliveryPipeline(deps: { db: Kysely<DB>; cache: IngestCache; clock: Clock }) {
  /** Spec 4.2.1: (a) external user of authProvider, (b) internal user id, (c) the webhook's default; members only. */
  async function resolveRunAsUser(webhook: WebhookRow, payload: ActionWebhookPayload): Promise<string | undefined> {
    const { orgId } = webhook;
    if (payload.userId && payload.authProvider) {
      const user = await usersRepo.findByExternalId(deps.db, payload.authProvider, payload.userId);
      if (user && (await deps.cache.isMember(orgId, user.id))) return user.id;
    }
    if (payload.userId && isUuid(payload.userId) && (await deps.cache.isMember(orgId, payload.userId))) return payload.userId;
    if (webhook.runAsUserId && (await deps.cache.isMember(orgId, webhook.runAsUserId))) return webhook.runAsUserId;
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
      return {
        status: 'create',
        runAsUserId,
        actionRuleId: rule.id,
        agentId: row.agentId ?? rule.agentId,
        instructions: payload.instructions ?? null,
      };
    },
  };
}

export type DeliveryPipeline = ReturnType<typeof createDeliveryPipeline>;
