import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UserRole } from '../../db/schema.ts';
import type { SessionMiddlewares } from '../auth/middlewares.ts';
import type { OrgsService } from './orgs.service.ts';
import { userOf } from '../../lib/request-context.ts';

type PreHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * The preHandlers of every org-scoped console route: a session (header or cookie) with the role,
 * then membership of `:org` (slug or ID), which sets `request.org`. A non-member gets the same 404
 * as for an org that does not exist.
 */
export function createOrgAccess(deps: { middlewares: SessionMiddlewares; orgs: OrgsService }) {
  return (role: UserRole = 'Admin'): PreHandler[] => [
    deps.middlewares.flexibleSessionMiddleware(role),
    async (request) => {
      const { org } = request.params as { org: string };
      request.org = await deps.orgs.requireMembership(org, userOf(request).id);
    },
  ];
}

export type OrgAccess = ReturnType<typeof createOrgAccess>;
