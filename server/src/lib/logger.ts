import { stdSerializers, type LoggerOptions } from 'pino';

const SENSITIVE_QUERY_KEYS = /^(code|state|token|access_token|id_token|session)$/i;

/** Paths whose last segment is a credential: an approval email's one-time link. */
const SECRET_PATH = /^(\/approvals\/decide\/)[^/?#]+/;

/** Replaces sensitive query values (OAuth codes, tokens) and path tokens so URLs can be logged. */
export function redactUrl(rawUrl: string): string {
  const url = rawUrl.replace(SECRET_PATH, '$1[REDACTED]');
  const index = url.indexOf('?');
  if (index === -1) return url;
  const params = new URLSearchParams(url.slice(index + 1));
  for (const key of [...params.keys()]) if (SENSITIVE_QUERY_KEYS.test(key)) params.set(key, '[REDACTED]');
  return `${url.slice(0, index)}?${params.toString()}`;
}

/** Error properties that carry a query's values (PGlite's errors: `params`): rejected reasons, ciphertexts, hints. */
const QUERY_VALUES = ['params', 'parameters', 'queryOptions'];

/** pino's error serializer, without the values of the query that failed (down the cause chain too). */
function serializeError(error: unknown): unknown {
  const serialized = stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
  for (
    let current: Record<string, unknown> | undefined = serialized;
    current && typeof current === 'object';
    current = current.cause as Record<string, unknown> | undefined
  ) {
    for (const key of QUERY_VALUES) delete current[key];
  }
  return serialized;
}

/** Keys whose value is a credential: redacted at a line's top level and one object down (`{ body: { password } }`). */
const CREDENTIAL_KEYS = ['password', 'newPassword', 'token', 'authToken', 'secret', 'apiKey', 'accessToken'];

/** pino options shared by the server and the CLI: secrets never reach a log line. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers.session',
        'req.headers["x-webhook-token"]',
        'res.headers["set-cookie"]',
        ...CREDENTIAL_KEYS,
        ...CREDENTIAL_KEYS.map((key) => `*.${key}`),
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      err: serializeError,
      // Method, path and client only: headers (cookies, tokens) never reach the log.
      req: (req: { method?: string; url?: string; ip?: string }) => ({
        method: req.method,
        url: req.url === undefined ? undefined : redactUrl(req.url),
        ip: req.ip,
      }),
    },
  };
}
