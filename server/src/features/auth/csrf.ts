import type { FastifyRequest } from 'fastify';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A cookie rides along with any cross-site request, so an unsafe request authenticated by cookie
 * must prove it comes from our own front end: an Origin we trust (APP_HOST, API_HOST), or a page of
 * the very origin it is sent to, which the browser attests in Sec-Fetch-Site and no page can forge
 * (the console opened at another address of this server: 127.0.0.1 for localhost). A request with
 * neither header is not from a browser and cannot be forged by one.
 */
export function isCsrfSafe(request: FastifyRequest, trustedOrigins: ReadonlySet<string>): boolean {
  if (SAFE_METHODS.has(request.method)) return true;
  const origin = request.headers.origin;
  if (origin !== undefined && trustedOrigins.has(origin)) return true;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  return origin === undefined;
}
