import type { FastifyReply } from 'fastify';
import { SESSION_LIFETIME_SECONDS } from './sessions.service.ts';

export const SESSION_COOKIE = 'session';

/** Spec 2.2: secure, httpOnly, sameSite none in production and lax otherwise, 30 days. */
function cookieOptions(isProduction: boolean) {
  return { path: '/', secure: true, httpOnly: true, sameSite: isProduction ? ('none' as const) : ('lax' as const) };
}

export function setSessionCookie(reply: FastifyReply, token: string, isProduction: boolean): void {
  reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions(isProduction), maxAge: SESSION_LIFETIME_SECONDS });
}

export function clearSessionCookie(reply: FastifyReply, isProduction: boolean): void {
  reply.setCookie(SESSION_COOKIE, '', { ...cookieOptions(isProduction), maxAge: 0 });
}
