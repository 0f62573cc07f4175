import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { paginationQuery } from '../../lib/pagination.ts';
import { wholeNumber } from '../../lib/whole-number.ts';
import type { SessionMiddlewares } from '../auth/middlewares.ts';
import type { ThreadsService } from './threads.service.ts';
import { errorSchema, sessionSecurity } from '../../lib/http-schemas.ts';
import { userOf } from '../../lib/request-context.ts';

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
    app.get(
      '/api/threads',
      {
        schema: {
          operationId: 'listThreads',
          tags: ['threads'],
          summary: "The caller's conversation threads, newest first",
          security: sessionSecurity,
          querystring: paginationQuery,
          response: {
            200: z.object({ threads: z.array(threadSchema), nextCursor: z.string().nullable() }),
            400: errorSchema,
            401: errorSchema,
          },
        },
        // The caller's own threads: any signed-in user, not only Admins.
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request) => {
        const page = await deps.threads.listForUser(userOf(request).id, request.query);
        return { threads: page.items, nextCursor: page.nextCursor };
      },
    );

    app.get(
      '/api/threads/:threadId/messages',
      {
        schema: {
          operationId: 'listThreadMessages',
          tags: ['threads'],
          summary:
            "One of the caller's threads: its messages, oldest first (AI SDK model messages: text, tool calls, tool results)",
          security: sessionSecurity,
          params: z.object({ threadId: z.uuid() }),
          querystring: z.object({
            limit: wholeNumber().min(1).max(500).default(100),
            cursor: z.string().max(20).optional(),
          }),
          response: {
            200: z.object({
              messages: z.array(
                z.object({
                  id: z.uuid(),
                  seq: z.int(),
                  role: z.enum(['user', 'assistant', 'tool']),
                  content: z.unknown(),
                  actionId: z.uuid().nullable(),
                  createdAt: z.date(),
                }),
              ),
              nextCursor: z.string().nullable(),
            }),
            400: errorSchema,
            401: errorSchema,
            404: errorSchema,
          },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request) => deps.threads.messages(userOf(request).id, request.params.threadId, request.query),
    );
  };
}
