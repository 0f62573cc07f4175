import type { FastifyRequest } from 'fastify';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A cookie rides along with any cross-site request, so an unsafe request authenticated by cookie
 * must prove it comes from our own front end. Browsers send Origin on every unsafe request (and
 * Sec-Fetch-Site besides); a request with neither is not from a browser and cannot be forged by one.
 */
export function isCsrfSafe(request: FastifyRequest, trustedOrigins: ReadonlySet<string>): boolean {
  if (SAFE_METHODS.has(request.method)) return true;
  const origin = request.headers.origin;
  if (origin !== undefined) return trustedOrigins.has(origin);
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  return true;
}
