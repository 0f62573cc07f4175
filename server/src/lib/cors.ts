import type { FastifyReply, onRequestHookHandler } from 'fastify';

/** Every method the API's routes take: a console on another origin edits (PATCH, PUT) and deletes. */
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/**
 * How long a browser may reuse a preflight's answer, in seconds: the trusted origins change only with
 * the deployment's configuration, so a cross-origin console need not ask before each edit (without it
 * browsers keep a preflight 5 s; Chromium caps this at 2 hours).
 */
const PREFLIGHT_MAX_AGE = '600';

/** Adds `field` to the reply's Vary header, keeping what another part of the answer put there. */
function vary(reply: FastifyReply, field: string): void {
  const current = reply.getHeader('vary');
  reply.header('vary', current ? `${String(current)}, ${field}` : field);
}

/**
 * CORS for the trusted origins (APP_HOST and API_HOST), with credentials: a console on another
 * origin than the API's reads its answers and sends its cookie. An allowed origin's request gets its
 * origin back in Access-Control-Allow-Origin; a preflight also the methods and the headers it asked
 * for. Another origin's gets no CORS header, so its browser refuses it the answer. A request without an
 * Origin header (a server, the CLI, a browser's same-origin GET) is not a CORS request and gets nothing:
 * @fastify/cors resolved its options and wrote two headers on every request, about 6% of the
 * instructions of a cached session check under callgrind (docs/benchmarks.md).
 */
export function corsHeaders(trustedOrigins: ReadonlySet<string>): onRequestHookHandler {
  return (request, reply, done) => {
    const { origin } = request.headers;
    if (origin === undefined) return done();
    const preflight = request.method === 'OPTIONS';
    // The answer depends on these request headers: caches must key on them, allowed or not.
    vary(reply, preflight ? 'Origin, Access-Control-Request-Headers' : 'Origin');
    if (!trustedOrigins.has(origin)) return done();
    reply.header('access-control-allow-origin', origin).header('access-control-allow-credentials', 'true');
    if (preflight) {
      reply.header('access-control-allow-methods', ALLOWED_METHODS).header('access-control-max-age', PREFLIGHT_MAX_AGE);
      const requested = request.headers['access-control-request-headers'];
      if (requested) reply.header('access-control-allow-headers', requested);
    }
    done();
  };
}
