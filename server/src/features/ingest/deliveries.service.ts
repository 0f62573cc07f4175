import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB, DeliveryRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import type { DeliveryPipeline, Outcome } from './delivery-pipeline.ts';
import type { DeliveryWriter } from './delivery-writer.ts';
import { deliveriesRepo } from './deliveries.repo.ts';
import type { IngestCache } from './ingest-cache.ts';
import { actionWebhookPayload } from './payload.ts';
import { ingestRepo } from './ingest.repo.ts';

/** A buffered delivery is retried this many times (outside_schedule waits do not count), then dead-lettered. */
export const MAX_BUFFERED_ATTEMPTS = 10;
const RETRY_BATCH = 200;

/** 1, 2, 4, ... minutes after each attempt, at most two hours apart: about six hours in all. */
export function bufferedRetryDelayMs(attempts: number): number {
  return Math.min(60_000 * 2 ** Math.max(0, attempts - 1), 2 * 60 * 60 * 1000);
}

const REPLAYABLE = new Set(['buffered', 'skipped', 'dead_lettered']);

export function createDeliveriesService(deps: {
  db: Kysely<DB>;
  cache: IngestCache;
  pipeline: DeliveryPipeline;
  writer: DeliveryWriter;
  clock: Clock;
  logger: Logger;
  /** How long a message id answers a retry of its event (WEBHOOK_MESSAGE_ID_RETENTION_HOURS). */
  messageIdRetentionMs: number;
  metrics: Pick<Metrics, 'messageIdsPurged' | 'messageIdsKept'>;
}) {
  /** Runs a stored delivery through today's configuration; `manual` is an operator's replay. */
  async function reprocess(
    row: DeliveryRow,
    manual: boolean,
  ): Promise<Outcome | { status: 'dead_lettered'; eventId: string; reason: string }> {
    const identifier = row.webhookId ? await ingestRepo.webhookIdentifier(deps.db, row.webhookId) : undefined;
    const webhook = identifier ? await deps.cache.webhook(identifier) : null;
    const payload = actionWebhookPayload.safeParse(row.payload);
    // Manual replays start a fresh series of attempts.
    const attempts = manual ? 1 : row.attempts + 1;
    if (!webhook || !payload.success) {
      const reason = webhook ? 'invalid_payload' : 'webhook_deleted';
      if (
        !(await deliveriesRepo.updateIfAttempts(deps.db, row.id, row.attempts, {
          status: 'dead_lettered',
          reason,
          attempts,
          nextAttemptAt: null,
        }))
      ) {
        throw new AppError('conflict', 'This delivery is being processed right now');
      }
      return { status: 'dead_lettered', eventId: row.id, reason };
    }
    const decision = await deps.pipeline.decide(webhook, payload.data);
    const now = deps.clock.now();
    if (
      decision.status === 'buffered' &&
      decision.reason !== 'outside_schedule' &&
      !manual &&
      attempts >= MAX_BUFFERED_ATTEMPTS
    ) {
      await deliveriesRepo.updateIfAttempts(deps.db, row.id, row.attempts, {
        status: 'dead_lettered',
        reason: decision.reason,
        attempts,
        nextAttemptAt: null,
      });
      return { status: 'dead_lettered', eventId: row.id, reason: decision.reason };
    }
    const nextAttemptAt =
      decision.status === 'buffered'
        ? (decision.nextAttemptAt ?? new Date(now.getTime() + bufferedRetryDelayMs(attempts)))
        : null;
    // Waiting for a schedule window is not a failed attempt.
    const counted = decision.status === 'buffered' && decision.reason === 'outside_schedule' && !manual ? row.attempts : attempts;
    return deps.writer.writeNow({
      ingress: {
        eventId: row.id,
        webhook: webhook.row,
        payload: payload.data,
        rawBody: null,
        headers: row.headers,
        sourceIp: row.sourceIp,
        messageId: row.messageId ?? undefined,
      },
      decision,
      nextAttemptAt,
      existing: { attempts: counted, expectedAttempts: row.attempts },
    });
  }

  return {
    /** Operator replay: buffered, skipped, dead-lettered and replayable failures only. */
    async replay(orgId: string, eventId: string) {
      const row = await deliveriesRepo.find(deps.db, orgId, eventId);
      if (!row) throw notFound('Delivery');
      if (row.source === 'email')
        throw new AppError('not_replayable', 'An email is not replayed: it is stored in its email thread');
      if (!(REPLAYABLE.has(row.status) || (row.status === 'failed' && row.replayable))) {
        const why = row.status === 'accepted' ? `it already created action ${row.actionId}` : 'its payload cannot be processed';
        throw new AppError('not_replayable', `This delivery cannot be replayed: ${why}`);
      }
      return reprocess(row, true);
    },

    /** Forgets the message ids past their retention (a retry of one is a new event from then on). */
    async forgetOldMessageIds(): Promise<number> {
      const forgotten = await deliveriesRepo.forgetMessageIdsBefore(
        deps.db,
        new Date(deps.clock.now().getTime() - deps.messageIdRetentionMs),
      );
      deps.metrics.messageIdsPurged.inc(forgotten);
      deps.metrics.messageIdsKept.set(await deliveriesRepo.estimateMessageIds(deps.db));
      return forgotten;
    },

    /** Retries the buffered deliveries that are due. */
    async retryDue(): Promise<number> {
      const now = deps.clock.now();
      const ids = await deliveriesRepo.dueIds(deps.db, now, RETRY_BATCH);
      for (const id of ids) {
        const row = await deliveriesRepo.findById(deps.db, id);
        if (row?.status !== 'buffered') continue;
        await reprocess(row, false).catch((error: unknown) => {
          if (!(error instanceof AppError && error.code === 'conflict'))
            deps.logger.warn({ err: error, eventId: id }, 'buffered delivery retry failed');
        });
      }
      return ids.length;
    },
  };
}

export type DeliveriesService = ReturnType<typeof createDeliveriesService>;
