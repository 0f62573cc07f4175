import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** Fastify's request logger and pino's child loggers alike. */
export interface RequestLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

/**
 * The two log lines of every request, at info level, whichever server answers it (Fastify's routes
 * or the ingest fast path): method, path (query secrets redacted by the `req` serializer) and client
 * on arrival; status and milliseconds when the answer is sent.
 */
export const requestLog = {
  incoming(log: RequestLogger, request: { method?: string; url?: string; ip: string }): void {
    log.info({ req: { method: request.method, url: request.url, ip: request.ip } }, 'incoming request');
  },
  completed(log: RequestLogger, statusCode: number, milliseconds: number): void {
    log.info({ res: { statusCode }, responseTime: milliseconds }, 'request completed');
  },
};

/** Fastify's request lines, written by requestLog (an answer that failed keeps Fastify's error line). */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!this.isLogDisabled(request)) requestLog.incoming(request.log, request);
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) super.requestCompleted(error, request, reply);
    else if (!this.isLogDisabled(request)) requestLog.completed(reply.log, reply.statusCode, reply.elapsedTime);
  }
}
