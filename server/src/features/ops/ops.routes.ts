import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';

export function opsRoutes(deps: { ping: () => Promise<void>; metrics: Metrics }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          operationId: 'getHealth',
          security: [],
          tags: ['ops'],
          summary: 'The process is up',
          response: { 200: z.object({ status: z.literal('ok') }) },
        },
        logLevel: 'warn',
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        schema: {
          operationId: 'getReadiness',
          security: [],
          tags: ['ops'],
          summary: 'The database answers',
          response: { 200: z.object({ status: z.literal('ready') }) },
        },
        logLevel: 'warn',
      },
      async () => {
        try {
          await deps.ping();
        } catch (error) {
          throw new AppError('not_ready', 'The database does not answer', { cause: error });
        }
        return { status: 'ready' as const };
      },
    );

    app.get(
      '/metrics',
      { schema: { operationId: 'getMetrics', security: [], tags: ['ops'], summary: 'Prometheus metrics', hide: false }, logLevel: 'warn' },
      async (_request, reply) => {
        reply.type(deps.metrics.registry.contentType);
        return deps.metrics.registry.metrics();
      },
    );
  };
}
