import { randomUUID } from 'node:crypto';
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Metrics } from './metrics.ts';

export interface TracingConfig {
  /** The OTLP/HTTP traces URL (OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces); null: tracing is off. */
  tracesUrl: string | null;
  headers: Record<string, string>;
  serviceName: string;
  /** Prompts, answers, tool arguments and results in span attributes (OTEL_RECORD_CONTENT). */
  recordContent: boolean;
  /** Which traces are recorded and exported (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG). */
  sampler: TracesSampler;
  maxQueueSize: number;
  scheduledDelayMs: number;
  exportTimeoutMs: number;
}

/** The samplers of the OpenTelemetry SDK environment specification that this service has. */
export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

export interface TracesSampler {
  name: (typeof TRACES_SAMPLERS)[number];
  /** For the ratio samplers: the share of new traces recorded. */
  ratio: number;
}

/** The SDK's sampler for a configured one: a `parentbased_` one follows the caller's decision (a `traceparent`'s flag). */
function samplerOf({ name, ratio }: TracesSampler): Sampler {
  const root = name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(ratio);
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

const propagator = new W3CTraceContextPropagator();

/**
 * OpenTelemetry traces, off unless an OTLP endpoint is configured. Spans are started with explicit
 * parents (no context manager): a run's, a request's, or one carried across processes as a W3C
 * `traceparent` stored on the action and its outbox rows. Export is batched on a bounded queue: an
 * endpoint that is down or slow costs spans (counted in /metrics), never an action its time.
 */
export function createTracing(config: TracingConfig, metrics: Pick<Metrics, 'spansExported' | 'spansDropped'>) {
  let provider: TracerProvider | undefined;
  let tracer: Tracer = trace.getTracer('agent-platform');
  if (config.tracesUrl) {
    const exporter = new OTLPTraceExporter({
      url: config.tracesUrl,
      headers: config.headers,
      timeoutMillis: config.exportTimeoutMs,
    });
    let queued = 0;
    // What the batch processor holds, mirrored: a span it would drop for a full queue is counted here instead.
    const counting: SpanExporter = {
      export(spans: ReadableSpan[], done) {
        queued -= spans.length;
        exporter.export(spans, (result) => {
          if (result.code === ExportResultCode.SUCCESS) metrics.spansExported.inc(spans.length);
          else metrics.spansDropped.inc({ reason: 'export_failed' }, spans.length);
          done(result);
        });
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush(),
    };
    const batch = new BatchSpanProcessor({
      exporter: counting,
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: Math.min(512, config.maxQueueSize),
      scheduledDelayMillis: config.scheduledDelayMs,
      exportTimeoutMillis: config.exportTimeoutMs,
    });
    const bounded: SpanProcessor = {
      onStart() {}, // the batch processor does nothing at a span's start either
      onEnd(span) {
        if (queued >= config.maxQueueSize) {
          metrics.spansDropped.inc({ reason: 'queue_full' });
          return;
        }
        queued++;
        batch.onEnd(span);
      },
      forceFlush: () => batch.forceFlush(),
      shutdown: () => batch.shutdown(),
    };
    provider = new TracerProvider({
      resource: resourceFromAttributes({
        [ATTR_SERVICE_NAME]: config.serviceName,
        [ATTR_SERVICE_VERSION]: '0.1.0',
        'service.instance.id': randomUUID(),
      }),
      spanProcessors: [bounded],
      sampler: samplerOf(config.sampler),
    });
    tracer = provider.getTracer('agent-platform');
  }

  /** A context carrying this span as the parent of others. */
  const contextOf = (span: Span): Context => trace.setSpan(ROOT_CONTEXT, span);
  const continuing = (traceparent: string | null | undefined): Context =>
    traceparent ? propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter) : ROOT_CONTEXT;

  return {
    enabled: provider !== undefined,
    recordContent: config.recordContent,
    tracer,

    /**
     * Starts a span under `parent` (a context, a span, a stored traceparent; none: a new trace). Its
     * attributes are set once it has started, so that a span the sampler drops never has them checked:
     * given to `startSpan`, the SDK checks and copies them twice (once for the sampler, whichever it
     * is; none offered here reads them), recorded or not.
     */
    start(
      name: string,
      parent: Context | Span | string | null | undefined,
      options: { kind?: SpanKind; attributes?: Attributes; startTime?: Date } = {},
    ): Span {
      const context =
        parent === null || parent === undefined || typeof parent === 'string'
          ? continuing(parent)
          : 'spanContext' in parent
            ? contextOf(parent)
            : parent;
      const span = tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, startTime: options.startTime }, context);
      if (options.attributes && span.isRecording()) span.setAttributes(options.attributes);
      return span;
    },

    /** The context a stored `traceparent` continues (none: a new trace), for spans that share it. */
    continuing,

    /** The context a request's `traceparent` header continues (none: a new trace). */
    fromHeaders: (headers: Record<string, string | string[] | undefined>): Context =>
      propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter),

    /** The `traceparent` that continues this span elsewhere (stored with a row; sent with a request); null when off. */
    traceparent(span: Span): string | null {
      if (!provider) return null;
      const carrier: Record<string, string> = {};
      propagator.inject(contextOf(span), carrier, defaultTextMapSetter);
      return carrier.traceparent ?? null;
    },

    /** Ends a span with an error's type and message (messages here never carry secrets). */
    fail(span: Span, error: unknown) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      span.setAttribute('error.type', error instanceof Error ? error.name : 'Error');
    },

    /** Runs `work` in a span that ends with it (failed, when it throws). */
    async inSpan<T>(
      name: string,
      parent: Context | Span | string | null | undefined,
      options: { kind?: SpanKind; attributes?: Attributes },
      work: (span: Span) => Promise<T>,
    ): Promise<T> {
      const span = this.start(name, parent, options);
      try {
        return await work(span);
      } catch (error) {
        this.fail(span, error);
        throw error;
      } finally {
        span.end();
      }
    },

    /** Sends what is queued, within a bound: a stopping process does not wait on an endpoint that is down. */
    async shutdown(timeoutMs = 2000): Promise<void> {
      if (!provider) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => {}),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

export type Tracing = ReturnType<typeof createTracing>;
export { type Span, SpanKind, SpanStatusCode };
