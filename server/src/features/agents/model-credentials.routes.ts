import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { OrgAccess } from '../orgs/org-access.ts';
import { MODEL_PROVIDERS } from '../../db/schema.ts';
import type { ModelCredentialsService } from './model-credentials.service.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';

const credentialSchema = z
  .object({ provider: z.enum(MODEL_PROVIDERS), apiKeyHint: z.string(), createdAt: z.date(), updatedAt: z.date() })
  .meta({ id: 'ModelCredential' });

export function modelCredentialsRoutes(deps: {
  modelCredentials: ModelCredentialsService;
  orgAccess: OrgAccess;
}): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['agents'], security: sessionSecurity };
    const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };
    const params = orgParams.extend({ provider: z.enum(MODEL_PROVIDERS) });
    app.get(
      '/orgs/:org/model-credentials',
      {
        schema: {
          operationId: 'listModelCredentials',
          ...common,
          summary: "The org's model provider keys (hints only)",
          params: orgParams,
          response: { 200: z.object({ credentials: z.array(credentialSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ credentials: await deps.modelCredentials.list(orgOf(request).id) }),
    );
    app.put(
      '/orgs/:org/model-credentials/:provider',
      {
        schema: {
          operationId: 'setModelCredential',
          ...common,
          summary: "Store the org's API key for a model provider (encrypted; used instead of the server's MODEL_API_KEY)",
          params,
          body: z.object({ apiKey: z.string().trim().min(8).max(500) }),
          response: { 200: credentialSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.modelCredentials.set(orgOf(request).id, request.params.provider, request.body.apiKey),
    );
    app.delete(
      '/orgs/:org/model-credentials/:provider',
      {
        schema: {
          operationId: 'deleteModelCredential',
          ...common,
          summary: "Remove the org's key for a provider",
          params,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.modelCredentials.remove(orgOf(request).id, request.params.provider);
        return reply.status(204).send(null);
      },
    );
  };
}
