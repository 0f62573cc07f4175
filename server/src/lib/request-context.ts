import type { FastifyRequest } from 'fastify';
import type { OrganizationRow, SessionRow, UserRow } from '../db/schema.ts';
import { AppError } from './errors.ts';

/**
 * What a route's preHandlers established, typed for its handler: the session middlewares set the
 * user and session, org access sets the org. A handler that asks for what its preHandlers never set
 * is a wiring mistake, answered 500 and logged, never a request served without its check.
 */
function established<T>(value: T | null, what: string): T {
  if (value === null) throw new AppError('internal_error', `Route used ${what} that no preHandler of it sets`);
  return value;
}

export const userOf = (request: FastifyRequest): UserRow => established(request.user, 'the session user');
export const sessionOf = (request: FastifyRequest): SessionRow => established(request.session, 'the session');
export const orgOf = (request: FastifyRequest): OrganizationRow => established(request.org, 'the org');
