import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { OpsService } from './ops.service.ts';

const dependencyState = z.enum(['ok', 'failing']);
const checksSchema = z
  .object({ database: dependencyState, redis: dependencyState.optional(), queue: dependencyState })
  .describe('Each dependency of this process: database, Redis (when configured), the job queue');

export function opsRoutes(deps: { ops: OpsService; metrics: Metrics }): FastifyPluginAsyncZod {
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
          summary: 'Every dependency answers and the process takes work',
          description:
            'Ready: 200 with each check `ok`. Not ready: 503 `not_ready`, whose `details.checks` say which dependency fails ' +
            '(the cause is logged, not shown), and `details.draining` whether the process is shutting down.',
          response: { 200: z.object({ status: z.literal('ready'), checks: checksSchema }) },
        },
        logLevel: 'warn',
      },
      async () => {
        const { checks, failing, draining } = await deps.ops.readiness();
        if (failing.length > 0 || draining) {
          const why = draining ? 'the process is shutting down' : `${failing.join(', ')} failing`;
          throw new AppError('not_ready', `Not ready: ${why}`, { details: { checks, draining } });
        }
        return { status: 'ready' as const, checks: checks as z.infer<typeof checksSchema> };
      },
    );

    app.get(
      '/metrics',
      {
        schema: { operationId: 'getMetrics', security: [], tags: ['ops'], summary: 'Prometheus metrics', hide: false },
        logLevel: 'warn',
      },
      async (_request, reply) => {
        reply.type(deps.metrics.registry.contentType);
        return deps.metrics.registry.metrics();
      },
    );
  };
}
