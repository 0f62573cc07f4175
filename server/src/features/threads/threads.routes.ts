import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { paginationQuery } from '../../lib/pagination.ts';
import { errorSchema, sessionSecurity } from '../auth/auth.schemas.ts';
import type { SessionMiddlewares } from '../auth/middlewares.ts';
import type { ThreadsService } from './threads.service.ts';

const threadSchema = z.object({
  id: z.uuid(),
  orgId: z.uuid().nullable(),
  channel: z.string(),
  title: z.string(),
  createdAt: z.date(),
  updatedAt: z.date(),
});

export function threadsRoutes(deps: { threads: ThreadsService; middlewares: SessionMiddlewares }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/api/threads', {
      schema: {
        tags: ['threads'],
        summary: "The caller's conversation threads, newest first",
        security: sessionSecurity,
        querystring: paginationQuery,
        response: { 200: z.object({ threads: z.array(threadSchema), nextCursor: z.string().nullable() }), 400: errorSchema, 401: errorSchema },
      },
      // The caller's own threads: any signed-in user, not only Admins.
      preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
    }, async (request) => {
      const page = await deps.threads.listForUser(request.user!.id, request.query);
      return { threads: page.items, nextCursor: page.nextCursor };
    });
  };
}
