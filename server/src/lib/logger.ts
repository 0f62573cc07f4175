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

/** Keys whose value is a credential, redacted wherever they appear in a line's plain objects and arrays. */
const CREDENTIAL_KEYS = new Set(['password', 'newPassword', 'token', 'authToken', 'secret', 'apiKey', 'accessToken']);
const CENSOR = '[REDACTED]';

/**
 * `value` with every credential key's value censored, at any depth of its plain objects and arrays (pino's
 * redaction paths name each depth: `*.password` is one object down only). The caller's objects are not
 * changed: what holds a credential is copied, and a reference back to an enclosing object becomes
 * "[Circular]", as pino prints it. Other objects (errors, requests, buffers) are left to their serializers.
 */
function redactCredentials(value: unknown, enclosing: Set<object>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const isArray = Array.isArray(value);
  const prototype = Object.getPrototypeOf(value);
  if (!isArray && prototype !== Object.prototype && prototype !== null) return value;
  if (enclosing.has(value)) return '[Circular]';
  enclosing.add(value);
  const redacted = isArray ? redactItems(value, enclosing) : redactFields(value as Record<string, unknown>, enclosing);
  enclosing.delete(value);
  return redacted;
}

function redactItems(items: unknown[], enclosing: Set<object>): unknown[] {
  let copy: unknown[] | undefined;
  items.forEach((item, index) => {
    const redacted = redactCredentials(item, enclosing);
    if (redacted === item) return;
    copy ??= [...items];
    copy[index] = redacted;
  });
  return copy ?? items;
}

function redactFields(fields: Record<string, unknown>, enclosing: Set<object>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(fields)) {
    const redacted = CREDENTIAL_KEYS.has(key) && field !== undefined ? CENSOR : redactCredentials(field, enclosing);
    if (redacted === field) continue;
    copy ??= { ...fields };
    copy[key] = redacted;
  }
  return copy ?? fields;
}

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
      ],
      censor: CENSOR,
    },
    // Runs on the lines written only (a line below the level is never built).
    formatters: { log: (object) => redactCredentials(object, new Set()) as Record<string, unknown> },
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
