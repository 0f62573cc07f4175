import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UserRole } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import { isCsrfSafe } from './csrf.ts';
import { SESSION_COOKIE } from './session-cookie.ts';
import type { SessionsService } from './sessions.service.ts';

type TokenSource = 'cookie' | 'header';
type PreHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** The documented 401 and 403 bodies, word for word (clients match on them). */
const noSession = () => new AppError('session_missing', 'Unauthorized: No session found');
const invalidSession = () => new AppError('session_invalid', 'Unauthorized: Invalid session');
const adminRequired = () => new AppError('admin_required', 'Forbidden: Requires Admin role');
const csrfRejected = () => new AppError('csrf_rejected', 'Forbidden: Cross-site request refused');

function tokenFromCookie(request: FastifyRequest): string | undefined {
  return request.cookies[SESSION_COOKIE] || undefined;
}

/** Authorization (`Bearer ` removed), else the `session` header, else the cookie. */
function tokenFromHeadersOrCookie(request: FastifyRequest): { token: string; source: TokenSource } | undefined {
  const authorization = request.headers.authorization?.replace(/^Bearer\s+/i, '').trim();
  if (authorization) return { token: authorization, source: 'header' };
  const header = request.headers.session;
  const sessionHeader = (Array.isArray(header) ? header[0] : header)?.trim();
  if (sessionHeader) return { token: sessionHeader, source: 'header' };
  const cookie = tokenFromCookie(request);
  return cookie ? { token: cookie, source: 'cookie' } : undefined;
}

export function createSessionMiddlewares(deps: { sessions: SessionsService; trustedOrigins: ReadonlySet<string> }) {
  async function authenticate(
    request: FastifyRequest,
    found: { token: string; source: TokenSource } | undefined,
    role: UserRole,
  ): Promise<void> {
    if (!found) throw noSession();
    if (found.source === 'cookie' && !isCsrfSafe(request, deps.trustedOrigins)) throw csrfRejected();
    const authenticated = await deps.sessions.validate(found.token);
    if (!authenticated) throw invalidSession();
    if (role === 'Admin' && authenticated.user.role !== 'Admin') throw adminRequired();
    request.user = authenticated.user;
    request.session = authenticated.session;
    request.sessionToken = found.token;
    request.sessionSource = found.source;
  }

  return {
    /** Cookie only; default role Guest. */
    sessionMiddleware(routeRole: UserRole = 'Guest'): PreHandler {
      return async (request) => {
        const token = tokenFromCookie(request);
        await authenticate(request, token ? { token, source: 'cookie' } : undefined, routeRole);
      };
    },

    /** Header or cookie, header first; default role Admin. */
    flexibleSessionMiddleware(requiredRole: UserRole = 'Admin'): PreHandler {
      return async (request) => {
        await authenticate(request, tokenFromHeadersOrCookie(request), requiredRole);
      };
    },

    /** Attaches user and session from a valid cookie; never fails the request. */
    optionalSessionMiddleware: (async (request) => {
      const token = tokenFromCookie(request);
      if (!token || !isCsrfSafe(request, deps.trustedOrigins)) return;
      const authenticated = await deps.sessions.validate(token).catch(() => undefined);
      if (!authenticated) return;
      request.user = authenticated.user;
      request.session = authenticated.session;
      request.sessionToken = token;
      request.sessionSource = 'cookie';
    }) as PreHandler,
  };
}

export type SessionMiddlewares = ReturnType<typeof createSessionMiddlewares>;
