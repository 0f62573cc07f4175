import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../../lib/metrics.ts';
import { errorResponse } from '../../lib/error-response.ts';
import { AppError } from '../../lib/errors.ts';
import { requestLog, type RequestLogger } from '../../lib/request-log.ts';
import { type Span, SpanKind, SpanStatusCode, type Tracing } from '../../lib/tracing.ts';
import type { IngestService } from './ingest.service.ts';

/** The two ingest routes, as Fastify names them (and so the request metrics), by the word after /webhooks/. */
export const INGEST_ROUTE_URLS = {
  actions: '/webhooks/actions/:org/:webhookIdentifier',
  ingest: '/webhooks/ingest/:org/:identifier',
} as const;
export type IngestRoute = keyof typeof INGEST_ROUTE_URLS;

const INGEST_PATH = /^\/webhooks\/(actions|ingest)\/([^/?]+)\/([^/?]+)(?:\?|$)/;

/** A path segment as text; one that is not valid percent-encoded UTF-8 matches no webhook (''). */
function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return '';
  }
}

/**
 * The ingest endpoints, answered straight from Node's HTTP server before Fastify routes the request.
 * Ingest is the service's hottest path, and Fastify's per-request machinery (router, request and reply
 * objects, hooks, child logger, serializer) was a fifth of its CPU: in paired bench/ingest runs this
 * path took the server from 144-160 to 115-133 µs per request, and the throughput up 9% to 16%
 * (trimming hooks, logger and serializer inside Fastify saved nothing measurable). This is the one
 * handler of ingest posts: the HTTP server hands them here before Fastify routes anything
 * (percent-encoded segments are decoded here too), and the Fastify routes of ingest.routes.ts, which
 * exist for the OpenAPI document, hand over here should a post ever reach them (`app.inject` does).
 *
 * What Fastify's hooks add to every answer is added here too: the security headers, the request
 * metrics, the request log lines (lib/request-log.ts), and a 503 once the server is closing. CORS is
 * not: webhook senders are servers, and the console's origins never post here.
 */
export function createIngestFastPath(deps: {
  ingest: IngestService;
  /** The client address as Fastify's `request.ip` gives it (TRUST_PROXY applied). */
  clientIp: (request: IncomingMessage) => string;
  nextRequestId: () => string;
  responseHeaders: Record<string, string>;
  metrics: Pick<Metrics, 'recordRequest'>;
  tracing: Pick<Tracing, 'enabled' | 'start' | 'fromHeaders' | 'traceparent'>;
  logger: Logger;
}) {
  let closing = false;

  function answer(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const json = JSON.stringify(body);
    response.writeHead(status, {
      ...deps.responseHeaders,
      ...headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(json)),
    });
    response.end(json);
  }

  /** The answer to one ingest post for these (decoded) path segments. */
  async function answerIngest(
    request: IncomingMessage,
    response: ServerResponse,
    org: string,
    identifier: string,
    ip: string,
    log: RequestLogger,
    span?: Span,
  ): Promise<void> {
    if (closing) {
      answer(response, 503, new AppError('not_ready', 'The service is shutting down').toBody(), { connection: 'close' });
      return;
    }
    try {
      const traceParent = span && deps.tracing.traceparent(span);
      const result = await deps.ingest.handle({ org, identifier, headers: request.headers, ip, body: request, traceParent });
      if (span && 'actionId' in result.body) span.setAttribute('agent_platform.action.id', result.body.actionId);
      answer(response, result.statusCode, result.body);
    } catch (error) {
      const { status, headers, body } = errorResponse(error, log);
      // An answer that failed half-way cannot be followed by another one: the connection is cut.
      if (response.headersSent) response.destroy();
      else answer(response, status, body, headers);
    }
  }

  return {
    /** Answers an ingest post and returns true; returns false for any other request, for Fastify. */
    serve(request: IncomingMessage, response: ServerResponse): boolean {
      const match = request.method === 'POST' ? INGEST_PATH.exec(request.url!) : null;
      if (!match) return false;
      const started = performance.now();
      const ip = deps.clientIp(request);
      const route = INGEST_ROUTE_URLS[match[1] as IngestRoute];
      // The request's span, continuing the sender's trace when it sent a traceparent: its action's trace.
      const span = deps.tracing.enabled
        ? deps.tracing.start(`POST ${route}`, deps.tracing.fromHeaders(request.headers), {
            kind: SpanKind.SERVER,
            attributes: { 'http.request.method': 'POST', 'http.route': route, 'client.address': ip },
          })
        : undefined;
      const logsRequests = deps.logger.isLevelEnabled('info');
      const log = logsRequests ? deps.logger.child({ reqId: deps.nextRequestId() }) : deps.logger;
      if (logsRequests) requestLog.incoming(log, { method: request.method, url: request.url, ip });
      response.once('finish', () => {
        const seconds = (performance.now() - started) / 1000;
        deps.metrics.recordRequest('POST', route, response.statusCode, seconds);
        if (span) {
          span.setAttribute('http.response.status_code', response.statusCode);
          if (response.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
        if (logsRequests) requestLog.completed(log, response.statusCode, seconds * 1000);
      });
      void answerIngest(request, response, decodeSegment(match[2]!), decodeSegment(match[3]!), ip, log, span);
      return true;
    },

    /** The same answer for a post that Fastify routed (its hooks log and measure it). */
    answerRouted: answerIngest,

    /** From now on, answers 503 and closes the connection, as Fastify does for its routes while it closes. */
    close(): void {
      closing = true;
    },
  };
}

export type IngestFastPath = ReturnType<typeof createIngestFastPath>;
