import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from '../../lib/metrics.ts';
import { errorResponse } from '../../lib/error-response.ts';
import { AppError } from '../../lib/errors.ts';
import { INGEST_ROUTE_URLS } from './ingest.routes.ts';
import type { IngestService } from './ingest.service.ts';

/** The two ingest paths (INGEST_ROUTE_URLS, by the word after /webhooks/). */
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
 * (trimming hooks, logger and serializer inside Fastify saved nothing measurable). The answers are
 * those the Fastify routes in ingest.routes.ts declare, which stay for the OpenAPI document: every
 * post to an ingest path is answered here (percent-encoded segments decoded here too), and any other
 * method goes on to Fastify.
 *
 * What Fastify's hooks add to every answer is added here too: the security headers, the request
 * metrics, the request log lines at info level, and a 503 once the server is closing. CORS is not:
 * webhook senders are servers, and the console's origins never post here.
 */
export function createIngestFastPath(deps: {
  ingest: IngestService;
  /** The client address as Fastify's `request.ip` gives it (TRUST_PROXY applied). */
  clientIp: (request: IncomingMessage) => string;
  nextRequestId: () => string;
  responseHeaders: Record<string, string>;
  metrics: Pick<Metrics, 'recordRequest'>;
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

  async function handle(request: IncomingMessage, response: ServerResponse, org: string, identifier: string, ip: string, log: Logger) {
    try {
      const result = await deps.ingest.handle({ org, identifier, headers: request.headers, ip, body: request });
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
      const route = INGEST_ROUTE_URLS[match[1] as keyof typeof INGEST_ROUTE_URLS];
      const ip = deps.clientIp(request);
      const logsRequests = deps.logger.isLevelEnabled('info');
      const log = logsRequests ? deps.logger.child({ reqId: deps.nextRequestId() }) : deps.logger;
      if (logsRequests) log.info({ req: { method: request.method, url: request.url, ip } }, 'incoming request');
      response.once('finish', () => {
        const seconds = (performance.now() - started) / 1000;
        deps.metrics.recordRequest('POST', route, response.statusCode, seconds);
        if (logsRequests) log.info({ res: { statusCode: response.statusCode }, responseTime: seconds * 1000 }, 'request completed');
      });
      if (closing) {
        answer(response, 503, new AppError('not_ready', 'The service is shutting down').toBody(), { connection: 'close' });
      } else {
        void handle(request, response, decodeSegment(match[2]!), decodeSegment(match[3]!), ip, log);
      }
      return true;
    },

    /** From now on, answers 503 and closes the connection, as Fastify does for its routes while it closes. */
    close(): void {
      closing = true;
    },
  };
}

export type IngestFastPath = ReturnType<typeof createIngestFastPath>;
