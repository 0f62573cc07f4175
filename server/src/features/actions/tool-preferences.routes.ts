import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionMiddlewares } from '../auth/middlewares.ts';
import type { ToolPreferencesService } from './tool-preferences.service.ts';
import { toolNameSchema } from '../agents/agents.schemas.ts';
import { errorSchema, sessionSecurity } from '../../lib/http-schemas.ts';
import { userOf } from '../../lib/request-context.ts';

const preferenceSchema = z
  .object({ toolName: z.string(), preference: z.enum(['always_deny', 'default']), updatedAt: z.date().nullable() })
  .meta({ id: 'ToolPreference' });

export function toolPreferencesRoutes(deps: {
  toolPreferences: ToolPreferencesService;
  middlewares: SessionMiddlewares;
}): FastifyPluginAsyncZod {
  return async (app) => {
    // Every signed-in user decides for themselves, Guests included.
    const preHandler = deps.middlewares.flexibleSessionMiddleware('Guest');
    const common = { tags: ['tool preferences'], security: sessionSecurity };
    app.get(
      '/api/me/tool-preferences',
      {
        schema: {
          operationId: 'listToolPreferences',
          ...common,
          summary: "The caller's tool preferences (tools not listed use the default)",
          response: { 200: z.object({ preferences: z.array(preferenceSchema) }), 401: errorSchema },
        },
        preHandler,
      },
      async (request) => ({ preferences: await deps.toolPreferences.list(userOf(request).id) }),
    );
    app.put(
      '/api/me/tool-preferences/:toolName',
      {
        schema: {
          operationId: 'setToolPreference',
          ...common,
          summary: 'Set the caller\'s preference for a tool: "always_deny" refuses every call of it in actions run as the caller',
          params: z.object({ toolName: toolNameSchema }),
          body: z.object({ preference: z.enum(['always_deny', 'default']) }),
          response: { 200: preferenceSchema, 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema },
        },
        preHandler,
      },
      async (request) => deps.toolPreferences.set(userOf(request).id, request.params.toolName, request.body.preference),
    );
  };
}
