import { AppError, type ErrorBody } from './errors.ts';

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
}

/**
 * What an error answers: an AppError its own status, headers and body (logged when a 5xx); anything
 * else a 500 whose body tells nothing of the cause, which only the log gets. `appError` is the error
 * as an AppError when the caller knows more ways to map one (Fastify's own errors).
 */
export function errorResponse(
  error: unknown,
  log: { error(object: object, message: string): void },
  appError = error instanceof AppError ? error : undefined,
): ErrorResponse {
  if (appError) {
    // not_ready is an expected answer (a readiness probe, whose cause was logged where found, or a shutdown), not a failure.
    if (appError.status >= 500 && appError.code !== 'not_ready') log.error({ err: appError.cause ?? appError }, appError.message);
    return { status: appError.status, headers: appError.headers, body: appError.toBody() };
  }
  log.error({ err: error }, 'unhandled error');
  return { status: 500, headers: {}, body: { error: 'Internal server error', code: 'internal_error' } };
}
