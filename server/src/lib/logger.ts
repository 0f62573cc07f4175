import { stdSerializers, type LoggerOptions } from 'pino';

const CENSOR = '[REDACTED]';

/** Query parameters that carry a one-time credential without a credential's name (OAuth's `code`, `state`). */
const SENSITIVE_QUERY_KEYS = /^(code|state|session)$/i;

/** Paths whose last segment is a credential: an approval email's one-time link. */
const SECRET_PATH = /^(\/approvals\/decide\/)[^/?#]+/;

/**
 * Replaces sensitive query values (OAuth codes, any parameter named as a credential is named in a
 * line: `token`, `access_token`, `api_key`, `client_secret`, and a credential of a recognizable shape in
 * any parameter, which the URL's encoding would hide from the line's last pass) and path tokens so
 * URLs can be logged.
 */
export function redactUrl(rawUrl: string): string {
  const url = rawUrl.replace(SECRET_PATH, `$1${CENSOR}`);
  const index = url.indexOf('?');
  if (index === -1) return url;
  const params = new URLSearchParams();
  for (const [key, value] of new URLSearchParams(url.slice(index + 1)))
    params.append(key, SENSITIVE_QUERY_KEYS.test(key) || isCredentialKey(key) ? CENSOR : redactCredentialText(value));
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
  // The serializer copied the error's own fields (a client's `token`, say): censored as any line's.
  return redactCredentials(serialized, new Set());
}

/**
 * A key whose value is a credential, whatever its case and separators (`apiKey`, `API_KEY`, `x-api-key`):
 * a password, secret or token of any kind (`clientSecret`, `refresh_token`; not `inputTokens`, a count),
 * an API, private or signing key, and what carries them (an HTTP client's error holds its request's
 * `Authorization` or `Cookie` header; a framework's parsed `cookies`). A plain `key` names too many other
 * things (a cache's, a job's).
 */
const CREDENTIAL_KEY = /(passwords?|passwd|secrets?|token|apikeys?|privatekey|signingkey|masterkey|authorization|cookies?)$/;
/** What `isCredentialKey` said of each key seen: the same few keys recur on every line. */
const credentialKeys = new Map<string, boolean>();
/** The memo's bounds: keys that a logged payload invents (many, or long) are checked each time instead. */
const MEMO_KEYS = 2_000;
const MEMO_KEY_LENGTH = 64;

function isCredentialKey(key: string): boolean {
  let credential = credentialKeys.get(key);
  if (credential === undefined) {
    credential = CREDENTIAL_KEY.test(key.toLowerCase().replace(/[-_]/g, ''));
    if (credentialKeys.size < MEMO_KEYS && key.length <= MEMO_KEY_LENGTH) credentialKeys.set(key, credential);
  }
  return credential;
}
/** How many objects deep the walk follows a line; what lies below is written as pino's depth marker. */
const MAX_DEPTH = 100;

/**
 * `value` as JSON will write it, with every credential key's value censored at any depth (pino's
 * redaction paths name each depth: `*.password` is one object down only). The caller's objects are not
 * changed: what holds a credential is copied (an instance as its own enumerable fields, which is what
 * JSON writes of it), and a reference back to an enclosing object becomes "[Circular]", as pino writes
 * it. A value that writes itself (`toJSON`: dates, buffers) is left as it is.
 */
function redactCredentials(value: unknown, enclosing: Set<object>): unknown {
  if (typeof value !== 'object' || value === null || typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  if (enclosing.has(value)) return '[Circular]';
  // Deeper than any shape the service logs (a hostile payload): pino's own marker, and no stack overflow.
  if (enclosing.size >= MAX_DEPTH) return Array.isArray(value) ? '[Array]' : '[Object]';
  enclosing.add(value);
  const redacted = Array.isArray(value) ? redactItems(value, enclosing) : redactFields(value, enclosing);
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

function redactFields(object: object, enclosing: Set<object>, skipped?: Set<string>): object {
  let copy: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(object)) {
    if (skipped?.has(key)) continue;
    const redacted = field !== undefined && isCredentialKey(key) ? CENSOR : redactCredentials(field, enclosing);
    if (redacted === field) continue;
    copy ??= { ...object };
    copy[key] = redacted;
  }
  return copy ?? object;
}

/**
 * Credentials recognizable by their shape, censored wherever a written line carries them: in its
 * message, an error's text, a value under a key not named as a credential (`key`, `session`), what a
 * `toJSON` wrote, a child logger's bindings. Matched on the line's JSON text, so no pattern takes a `"`
 * or a `\` (the end of a JSON string, or its escapes) and the line stays valid JSON. The shapes are those
 * the service holds or is sent: a URL's password (`DATABASE_URL`), an Authorization value, a Standard
 * Webhooks secret (ours and the mail provider's), a JWT (ID and OAuth access tokens), the mail, model,
 * Slack and GitHub providers' prefixed keys, and a PEM private key (to the end of its JSON string).
 */
const CREDENTIAL_TEXT = new RegExp(
  [
    String.raw`(?<userinfo>:\/\/[^\s\/:@"\\]*:)[^\s\/@"\\]+(?=@)`,
    String.raw`\b(?:[Bb]earer|[Bb]asic)\s+[\w.~+\/=-]{8,}`,
    String.raw`\bwhsec_[A-Za-z0-9+\/=]{8,}`,
    String.raw`\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*`,
    String.raw`\b(?:re_|sk-|xox[abeoprs]-|xapp-|gh[pousr]_|github_pat_)[\w-]{12,}`,
    String.raw`-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^"\\]|\\.)*`,
  ].join('|'),
  'g',
);

/**
 * `text` (a written line, a URL's query value) with every credential of a recognizable shape censored;
 * a URL keeps its user and host.
 */
function redactCredentialText(text: string): string {
  return text.replace(CREDENTIAL_TEXT, (...match) => {
    const { userinfo } = match.at(-1) as { userinfo?: string };
    return userinfo === undefined ? CENSOR : `${userinfo}${CENSOR}`;
  });
}

const serializers = {
  err: serializeError,
  // Method, path and client only: headers (cookies, tokens) never reach the log.
  req: (req: { method?: string; url?: string; ip?: string }) => ({
    method: req.method,
    url: req.url === undefined ? undefined : redactUrl(req.url),
    ip: req.ip,
  }),
};
/** A line's keys that its serializers write in shapes of their own (`err`'s redacted there): not walked before them. */
const SERIALIZED_KEYS = new Set(Object.keys(serializers));

/** pino options shared by the server and the CLI: secrets never reach a log line. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    // No pino `redact` paths: `req` is written as its serializer's three fields (no headers), and the
    // walk below censors every other key at any depth (a `res`'s `set-cookie` too).
    // Runs on the lines written only (a line below the level is never built), before the serializers.
    formatters: { log: (line) => redactFields(line, new Set([line]), SERIALIZED_KEYS) as Record<string, unknown> },
    serializers,
    // The last pass, on the line as written: what no key names but its shape gives away.
    hooks: { streamWrite: redactCredentialText },
  };
}
