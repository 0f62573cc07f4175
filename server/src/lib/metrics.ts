import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one process, served at GET /metrics. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  // Label children memoized per (method, route, status): routes are a bounded set, and hashing the
  // label object on every request showed in the session benchmark.
  const children = new Map<string, { count: { inc(): void }; duration: { observe(value: number): void } }>();
  return {
    registry,
    recordRequest(method: string, route: string, status: number, seconds: number): void {
      const key = `${method} ${route} ${status}`;
      let child = children.get(key);
      if (!child) {
        const labels = { method, route, status: String(status) };
        child = { count: httpRequests.labels(labels), duration: httpDuration.labels(labels) };
        children.set(key, child);
      }
      child.count.inc();
      child.duration.observe(seconds);
    },
    jobs: new Counter({
      name: 'jobs_processed_total',
      help: 'Background jobs processed by queue and outcome',
      labelNames: ['queue', 'outcome'] as const,
      registers: [registry],
    }),
    ingestPendingBodies: new Gauge({
      name: 'webhook_ingest_pending_bodies',
      help: 'Ingest request bodies being received now (capped by INGEST_MAX_PENDING_BODIES)',
      registers: [registry],
    }),
    messageIdsPurged: new Counter({
      name: 'webhook_message_ids_purged_total',
      help: 'Webhook message ids forgotten after WEBHOOK_MESSAGE_ID_RETENTION_HOURS',
      registers: [registry],
    }),
    messageIdsKept: new Gauge({
      name: 'webhook_message_ids_kept',
      help: "Webhook message ids kept to answer retries (the planner's estimate, updated every minute)",
      registers: [registry],
    }),
    ingestBatchSize: new Histogram({
      name: 'webhook_ingest_batch_size',
      help: 'Deliveries written per group-committed ingest transaction',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200],
      registers: [registry],
    }),
    ingestBatchDuration: new Histogram({
      name: 'webhook_ingest_batch_duration_seconds',
      help: 'Duration of one group-committed ingest transaction',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    callbackAttempts: new Counter({
      name: 'callback_attempts_total',
      help: 'Callback delivery attempts by outcome (succeeded, pending = will retry, failed, dead_lettered)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    approvalDecisions: new Counter({
      name: 'approval_decisions_total',
      help: 'Decisions on staged tool calls by channel (console, api, email_link, email_reply, slack; deadline) and decision',
      labelNames: ['channel', 'decision'] as const,
      registers: [registry],
    }),
    approvalNotifications: new Counter({
      name: 'approval_notifications_total',
      help:
        'Approvers told of staged tool calls, per call, by channel (email) and outcome (sent, not_sent with a reason in ' +
        'the ledger, failed)',
      labelNames: ['channel', 'outcome'] as const,
      registers: [registry],
    }),
    approvalDecisionSeconds: new Histogram({
      name: 'approval_decision_seconds',
      help: 'Time from a tool call being staged to its decision, by channel',
      labelNames: ['channel'] as const,
      buckets: [10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600],
      registers: [registry],
    }),
    spansExported: new Counter({
      name: 'otel_spans_exported_total',
      help: 'Trace spans the OTLP endpoint took',
      registers: [registry],
    }),
    spansDropped: new Counter({
      name: 'otel_spans_dropped_total',
      help: 'Trace spans lost: queue_full (the export queue was full) or export_failed (the OTLP endpoint did not take them)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    unhandledRejections: new Counter({
      name: 'unhandled_rejections_total',
      help: 'Promise rejections nothing handled (each a bug, logged at error level); the process goes on serving',
      registers: [registry],
    }),
    jobDuration: new Histogram({
      name: 'job_duration_seconds',
      help: 'Background job duration by queue',
      labelNames: ['queue'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
