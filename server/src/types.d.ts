import type { OrganizationRow, SessionRow, UserRow } from './db/schema.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session middlewares. */
    user: UserRow | null;
    session: SessionRow | null;
    sessionToken: string | null;
    /** How the session came: the console's cookie, or a client's Authorization header. */
    sessionSource: 'cookie' | 'header' | null;
    /** Set by the org-membership preHandler of org-scoped routes. */
    org: OrganizationRow | null;
  }
}
