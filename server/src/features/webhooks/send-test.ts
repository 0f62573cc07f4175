import type { Kysely } from 'kysely';
import type { DB, OrganizationRow } from '../../db/schema.ts';
import { orgsRepo } from '../orgs/orgs.repo.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { DeliveryPipeline } from '../ingest/delivery-pipeline.ts';
import type { DeliveryWriter } from '../ingest/delivery-writer.ts';
import type { IngestCache } from '../ingest/ingest-cache.ts';
import { toIngestResponse } from '../ingest/ingest.service.ts';
import { signingHeaders } from '../ingest/verification.ts';
import type { WebhooksService } from './webhooks.service.ts';

export interface SendTestInput {
  eventType: string;
  data: Record<string, unknown>;
  externalId?: string;
  userId?: string;
}

/**
 * The console's Send Test. Without a user it signs a test event with the webhook's
 * scheme and posts it to the public URL, exercising verification like a real sender. With an
 * internal user selected it creates the action directly for that user, without a signature.
 */
export function createSendTest(deps: {
  db: Kysely<DB>;
  webhooks: WebhooksService;
  cache: IngestCache;
  pipeline: DeliveryPipeline;
  writer: DeliveryWriter;
  clock: Clock;
}) {
  return async (org: OrganizationRow, webhookId: string, input: SendTestInput) => {
    const row = await deps.webhooks.requireWebhook(org.id, webhookId);
    const payload = {
      eventType: input.eventType,
      data: input.data,
      ...(input.externalId ? { externalId: input.externalId } : {}),
    };
    if (input.userId) {
      if (!(await orgsRepo.isMember(deps.db, org.id, input.userId))) {
        throw new AppError('validation_failed', 'body/userId: no member of the organization with this id');
      }
      const webhook = await deps.cache.webhook(row.identifier);
      if (!webhook) throw new AppError('not_found', 'Webhook not found');
      const decision = await deps.pipeline.decide(webhook, { ...payload, userId: input.userId });
      const outcome = await deps.writer.writeNow({
        ingress: {
          eventId: crypto.randomUUID(),
          webhook: row,
          payload: { ...payload, userId: input.userId },
          rawBody: null,
          headers: { 'x-agent-platform-send-test': 'direct' },
          sourceIp: null,
        },
        decision,
        nextAttemptAt: decision.status === 'buffered' ? (decision.nextAttemptAt ?? deps.clock.now()) : null,
      });
      const { statusCode, body } = toIngestResponse(outcome);
      return { mode: 'direct' as const, statusCode, response: body };
    }
    const webhook = await deps.cache.webhook(row.identifier);
    const body = JSON.stringify(payload);
    const response = await fetch(deps.webhooks.urlOf(org, row.identifier), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agent-platform-send-test',
        ...signingHeaders(row.verificationScheme, webhook!.secret, body, {
          nowSeconds: Math.floor(deps.clock.now().getTime() / 1000),
        }),
      },
      body,
      signal: AbortSignal.timeout(15_000),
      redirect: 'error',
    }).catch((error: unknown) => {
      throw new AppError('upstream_unavailable', `The webhook URL could not be reached: ${(error as Error).message}`);
    });
    return { mode: 'http' as const, statusCode: response.status, response: (await response.json().catch(() => null)) as unknown };
  };
}

export type SendTest = ReturnType<typeof createSendTest>;
