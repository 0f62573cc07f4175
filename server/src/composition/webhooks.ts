import { createCallbackDispatcher } from '../features/callbacks/dispatcher.ts';
import { createCallbacksService } from '../features/callbacks/callbacks.service.ts';
import { createDeliveriesService } from '../features/ingest/deliveries.service.ts';
import { createDeliveryPipeline } from '../features/ingest/delivery-pipeline.ts';
import { createDeliveryWriter } from '../features/ingest/delivery-writer.ts';
import { createIngestCache } from '../features/ingest/ingest-cache.ts';
import { createIngestService } from '../features/ingest/ingest.service.ts';
import { createLedgerService } from '../features/ledger/ledger.service.ts';
import { createSendTest } from '../features/webhooks/send-test.ts';
import { createWebhooksService } from '../features/webhooks/webhooks.service.ts';
import { createGuardedHttpClient } from '../lib/http-client.ts';
import { BUS_TOPICS } from '../lib/process-bus.ts';
import type { RateLimiters } from '../lib/rate-limit.ts';
import type { Shared } from './shared.ts';

/** Webhooks in (configuration, ingest, buffering, the ledger) and callbacks out. */
export function composeWebhooks(shared: Shared, rateLimiters: RateLimiters) {
  const { config, database, db, clock, logger, metrics, box, bus, announce, wakeRunners } = shared;
  const callbacks = createCallbacksService({
    db,
    box,
    clock,
    allowPrivateNetworks: config.callbacks.allowPrivateNetworks,
    announce,
  });
  const httpClient = createGuardedHttpClient({
    allowPrivateNetworks: config.callbacks.allowPrivateNetworks,
    connectTimeoutMs: config.callbacks.timeoutMs,
  });
  const dispatcher = createCallbackDispatcher({
    db,
    bus,
    metrics,
    tracing: shared.tracing,
    logger,
    clock,
    httpClient,
    decrypt: (encrypted) => box.decrypt(encrypted),
    options: {
      concurrency: config.callbacks.concurrency,
      timeoutMs: config.callbacks.timeoutMs,
      retryScheduleMs: config.callbacks.retryScheduleMs,
    },
  });

  const cache = createIngestCache({ db, box, bus, clock });
  const pipeline = createDeliveryPipeline({ db, cache, clock });
  const writer = createDeliveryWriter({
    db,
    wakeRunners,
    runnersNotice: () => bus.commitNotice(BUS_TOPICS.actionRuns),
    metrics,
    clock,
    maxInFlight: database.kind === 'pglite' ? 1 : config.ingestWriteConcurrency,
  });
  const webhooks = createWebhooksService({ db, box, bus, apiHost: config.apiHost, clock });
  const services = {
    webhooks,
    ingest: createIngestService({
      db,
      cache,
      pipeline,
      writer,
      clock,
      rateLimiters,
      metrics,
      logger,
      ipLimitPerMinute: config.rateLimit.webhookIpPerMinute,
      maxPendingBodies: config.ingestMaxPendingBodies,
    }),
    deliveries: createDeliveriesService({
      db,
      cache,
      pipeline,
      writer,
      clock,
      logger,
      metrics,
      messageIdRetentionMs: config.messageIdRetentionMs,
    }),
    ledger: createLedgerService({ db, callbacks }),
    sendTest: createSendTest({ db, webhooks, cache, pipeline, writer, clock }),
    callbacks,
  };
  return { services, dispatcher, writer, httpClient };
}
