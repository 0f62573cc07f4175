import { hash, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB, WebhookRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { RateLimiter, RateLimiters } from '../../lib/rate-limit.ts';
import type { DeliveryPipeline, Outcome } from './delivery-pipeline.ts';
import type { DeliveryWriter } from './delivery-writer.ts';
import { deliveriesRepo } from './deliveries.repo.ts';
import type { IngestCache } from './ingest-cache.ts';
import { actionWebhookPayload } from './payload.ts';
import { readBodyWithLimit } from './read-body.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { jsonShapeProblem, storableText, unstorableText } from '../../lib/json-input.ts';
import { redactHeaders, verifySender } from './verification.ts';

/**
 * What an org slug, org id or webhook identifier can be (letters, digits, - and _; at most 63, 36 and
 * 32 characters): anything else (a NUL, a percent-decoded slash, 5,000 characters) is not found
 * without a lookup or a cache entry.
 */
const PATH_SEGMENT = /^[A-Za-z0-9_-]{1,100}$/;
const noWebhook = () => new AppError('not_found', 'No webhook at this URL');

export interface IngestRequest {
  org: string;
  identifier: string;
  headers: IncomingHttpHeaders;
  ip: string;
  body: IncomingMessage;
  /** The request's span, as the traceparent its action carries (tracing on). */
  traceParent?: string | null;
}

export type IngestResponse =
  | { statusCode: 200; body: { success: true; actionId: string; alreadyExists?: true } }
  | { statusCode: 202; body: { success: true; buffered: true; eventId: string; reason: string } }
  | { statusCode: 202; body: { success: true; skipped: true; eventId: string; reason: string } };

export function toIngestResponse(outcome: Outcome): IngestResponse {
  switch (outcome.status) {
    case 'accepted':
      return {
        statusCode: 200,
        body: outcome.alreadyExists
          ? { success: true, actionId: outcome.actionId, alreadyExists: true }
          : { success: true, actionId: outcome.actionId },
      };
    case 'buffered':
      return { statusCode: 202, body: { success: true, buffered: true, eventId: outcome.eventId, reason: outcome.reason } };
    case 'skipped':
      return { statusCode: 202, body: { success: true, skipped: true, eventId: outcome.eventId, reason: outcome.reason } };
  }
}

export function createIngestService(deps: {
  db: Kysely<DB>;
  cache: IngestCache;
  pipeline: DeliveryPipeline;
  writer: DeliveryWriter;
  clock: Clock;
  rateLimiters: RateLimiters;
  ipLimitPerMinute: number;
  /** Bodies being received at once, at most: slow senders cannot hold more memory than this many bodies. */
  maxPendingBodies: number;
  metrics: Pick<Metrics, 'ingestPendingBodies'>;
  logger: Logger;
}) {
  let pendingBodies = 0;
  async function readBody(request: IngestRequest, limit: number): Promise<Buffer> {
    if (pendingBodies >= deps.maxPendingBodies) {
      throw new AppError('overloaded', 'Too many requests are sending their bodies at once; try again shortly', {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    pendingBodies++;
    deps.metrics.ingestPendingBodies.set(pendingBodies);
    try {
      return await readBodyWithLimit(request.body, limit);
    } finally {
      pendingBodies--;
      deps.metrics.ingestPendingBodies.set(pendingBodies);
    }
  }

  const perIp = deps.rateLimiters.create({ name: 'webhook-ip', points: deps.ipLimitPerMinute, durationSeconds: 60 });
  // One limiter per distinct per-webhook limit (at most 1000 of them), keyed by webhook id.
  const perWebhook = new Map<number, RateLimiter>();
  const webhookLimiter = (points: number) => {
    let limiter = perWebhook.get(points);
    if (!limiter) {
      limiter = deps.rateLimiters.create({ name: `webhook-${points}`, points, durationSeconds: 60 });
      perWebhook.set(points, limiter);
    }
    return limiter;
  };

  /** A verified request whose body is unusable: recorded as a failed, not replayable, delivery. */
  async function recordFailure(failure: {
    eventId: string;
    webhook: WebhookRow;
    text: string;
    headers: Record<string, string>;
    ip: string;
    messageId?: string;
    reason: string;
  }) {
    const { webhook } = failure;
    await deps.db
      .transaction()
      .execute(async (trx) => {
        if (failure.messageId) await deliveriesRepo.rememberMessageId(trx, webhook.id, failure.messageId);
        await deliveriesRepo.insert(trx, {
          id: failure.eventId,
          orgId: webhook.orgId,
          webhookId: webhook.id,
          status: 'failed',
          reason: failure.reason,
          replayable: false,
          rawBody: storableText(failure.text.slice(0, 64 * 1024)),
          headers: JSON.stringify(failure.headers),
          verificationScheme: webhook.verificationScheme,
          sourceIp: failure.ip,
          messageId: failure.messageId ?? null,
        });
      })
      .catch((error: unknown) => {
        // A replayed wh-id with a broken body is still just a 400; anything else is worth a log line,
        // but the sender's answer stays the 400 its body earned.
        if (!isUniqueViolation(error, 'webhook_message_ids_pkey'))
          deps.logger.warn({ err: error }, 'could not record a failed delivery');
      });
  }

  return {
    /** 404, 403, 429 (per IP), 413, 401, 429 (per webhook), 400, then the pipeline. */
    async handle(request: IngestRequest): Promise<IngestResponse> {
      if (!PATH_SEGMENT.test(request.org) || !PATH_SEGMENT.test(request.identifier)) throw noWebhook();
      const webhook = await deps.cache.webhook(request.identifier);
      if (!webhook || (request.org !== webhook.orgSlug && request.org !== webhook.row.orgId)) {
        throw noWebhook();
      }
      const { row } = webhook;
      if (!row.enabled) throw new AppError('webhook_disabled', 'This webhook is disabled');
      const origin = request.headers.origin;
      if (origin !== undefined && webhook.allowedOrigins.size > 0 && !webhook.allowedOrigins.has(origin)) {
        throw new AppError('origin_blocked', `Origin ${origin} may not post to this webhook`);
      }
      const address = request.ip.replace(/^::ffff:(?=\d+\.)/, ''); // an IPv4 client seen through an IPv6 socket
      if (webhook.blockList?.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')) {
        throw new AppError('ip_blocked', 'This sender address is blocked for this webhook');
      }
      await perIp.consume(request.ip);
      const rawBody = await readBody(request, row.maxPayloadBytes);
      const nowSeconds = Math.floor(deps.clock.now().getTime() / 1000);
      const { messageId } = verifySender(
        row.verificationScheme,
        deps.cache.secretsOf(webhook),
        request.headers,
        rawBody,
        nowSeconds,
      );
      // Only verified requests count against the webhook's own limit: anyone who knows its URL could
      // otherwise lock its real sender out (the per-IP limit above counts every request).
      await webhookLimiter(row.rateLimitPerMinute).consume(row.id);

      const eventId = randomUUID();
      const text = rawBody.toString('utf8');
      const headers = redactHeaders(request.headers);
      const fail = (reason: string) => recordFailure({ eventId, webhook: row, text, headers, ip: request.ip, messageId, reason });
      const shapeProblem = jsonShapeProblem(rawBody);
      if (shapeProblem) {
        await fail('invalid_payload');
        throw new AppError('invalid_payload', `The body ${shapeProblem}`);
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        await fail('invalid_json');
        throw new AppError('invalid_json', 'The body is not valid JSON');
      }
      const textProblem = unstorableText(json);
      if (textProblem) {
        await fail('invalid_payload');
        throw new AppError('invalid_payload', `The payload cannot be accepted: ${textProblem}`);
      }
      const parsed = actionWebhookPayload.safeParse(json);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
        await fail('invalid_payload');
        throw new AppError('validation_failed', `The payload does not match ActionWebhookPayload: ${problems}`);
      }

      const decision = await deps.pipeline.decide(webhook, parsed.data);
      const outcome = await deps.writer.write({
        ingress: {
          eventId,
          webhook: row,
          payload: parsed.data,
          rawBody: null,
          headers,
          sourceIp: request.ip,
          messageId,
          bodyDigest: messageId && hash('sha256', rawBody, 'base64url'),
          traceParent: request.traceParent,
        },
        decision,
        nextAttemptAt: decision.status === 'buffered' ? (decision.nextAttemptAt ?? deps.clock.now()) : null,
      });
      return toIngestResponse(outcome);
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;
