import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SessionMiddlewares } from '../auth/middlewares.ts';
import { toPublicUser, userSchema } from '../users/users.schemas.ts';
import type { OrgsService } from './orgs.service.ts';
import { errorSchema, sessionSecurity } from '../../lib/http-schemas.ts';
import { userOf } from '../../lib/request-context.ts';

const orgSchema = z.object({ id: z.uuid(), slug: z.string(), name: z.string(), createdAt: z.date() });
const orgParams = z.object({ org: z.string().min(1).max(100) });
const errors = { 401: errorSchema, 403: errorSchema, 404: errorSchema };

export function orgsRoutes(deps: { orgs: OrgsService; middlewares: SessionMiddlewares }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/orgs',
      {
        schema: {
          operationId: 'listOrgs',
          tags: ['orgs'],
          summary: "The caller's organizations",
          security: sessionSecurity,
          response: { 200: z.object({ organizations: z.array(orgSchema) }), ...errors },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request) => ({ organizations: await deps.orgs.listForUser(userOf(request).id) }),
    );

    app.get(
      '/orgs/:org',
      {
        schema: {
          operationId: 'getOrg',
          tags: ['orgs'],
          summary: 'One organization (members only)',
          security: sessionSecurity,
          params: orgParams,
          response: { 200: orgSchema, ...errors },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request) => deps.orgs.requireMembership(request.params.org, userOf(request).id),
    );

    app.get(
      '/orgs/:org/members',
      {
        schema: {
          operationId: 'listOrgMembers',
          tags: ['orgs'],
          summary: 'Members of an organization (Admin, members only)',
          security: sessionSecurity,
          params: orgParams,
          response: { 200: z.object({ members: z.array(userSchema.extend({ joinedAt: z.date() })) }), ...errors },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Admin'),
      },
      async (request) => {
        const members = await deps.orgs.listMembers(request.params.org, userOf(request).id);
        return { members: members.map((member) => ({ ...toPublicUser(member), joinedAt: member.joinedAt })) };
      },
    );
  };
}
