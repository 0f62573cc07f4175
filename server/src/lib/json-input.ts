/**
 * The one rule for text and JSON that the service accepts from outside: every route's params,
 * query and body (a hook in app.ts), webhook payloads (ingest) and what is stored from them.
 *
 * - NUL (U+0000) is refused: PostgreSQL's text and jsonb cannot store it.
 * - An unpaired surrogate (`"\ud800"`) is refused: it is not a character, and jsonb refuses it.
 * - Nesting deeper than MAX_JSON_DEPTH is refused: deep values overflow the stack of every
 *   recursive reader (JSON.stringify, zod, the ledger's renderers), and no real payload needs it.
 * - More than MAX_JSON_VALUES values in one body is refused before it is parsed, so that parsing,
 *   validating and storing a body stays in the tens of milliseconds whatever a webhook's size limit.
 */
export const MAX_JSON_DEPTH = 64;
export const MAX_JSON_VALUES = 100_000;

const BRACE_OPEN = 0x7b;
const BRACKET_OPEN = 0x5b;
const BRACE_CLOSE = 0x7d;
const BRACKET_CLOSE = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The nesting depth and value count of raw JSON bytes, in one pass that does not parse: what a
 * body would cost is known before paying for it. Malformed input is left to JSON.parse.
 */
export function jsonShapeProblem(
  bytes: Uint8Array,
  limits = { maxDepth: MAX_JSON_DEPTH, maxValues: MAX_JSON_VALUES },
): string | undefined {
  let depth = 0;
  let values = 1;
  let inString = false;
  for (let index = 0; index < bytes.length; index++) {
    const byte = bytes[index]!;
    if (inString) {
      if (byte === BACKSLASH) index++;
      else if (byte === QUOTE) inString = false;
      continue;
    }
    if (byte === QUOTE) inString = true;
    else if (byte === BRACE_OPEN || byte === BRACKET_OPEN) {
      if (++depth > limits.maxDepth) return `is nested deeper than ${limits.maxDepth} levels`;
    } else if (byte === BRACE_CLOSE || byte === BRACKET_CLOSE) depth--;
    else if (byte === COMMA && ++values > limits.maxValues) return `has more than ${limits.maxValues} values`;
  }
  return undefined;
}

const textProblem = (text: string): string | undefined =>
  text.includes('\u0000')
    ? 'contains a NUL character (\\u0000)'
    : text.isWellFormed()
      ? undefined
      : 'contains an unpaired surrogate';

interface Visit {
  value: unknown;
  key: string;
  parent: Visit | undefined;
  depth: number;
}

/** `root.a.0.b`: built only for the one value that breaks the rule, not for every value visited. */
const pathOf = (visit: Visit): string => (visit.parent ? `${pathOf(visit.parent)}.${visit.key}` : visit.key);

/**
 * Where a parsed value breaks the rule, as `path: problem` (path from `root`), or undefined.
 * Iterative, so that it is safe on any input; object keys are text too.
 */
export function unstorableText(value: unknown, root = 'body', maxDepth = MAX_JSON_DEPTH): string | undefined {
  const stack: Visit[] = [{ value, key: root, parent: undefined, depth: 0 }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const current = visit.value;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) return `${pathOf(visit)}: ${problem}`;
    } else if (typeof current === 'object' && current !== null && !ArrayBuffer.isView(current)) {
      // (Bytes, a raw body kept for its signature, are not text: their reader checks them.)
      if (visit.depth >= maxDepth) return `${pathOf(visit)}: nested deeper than ${maxDepth} levels`;
      if (Array.isArray(current)) {
        for (let index = 0; index < current.length; index++)
          stack.push({ value: current[index], key: String(index), parent: visit, depth: visit.depth + 1 });
      } else {
        for (const [key, entry] of Object.entries(current)) {
          const problem = textProblem(key);
          if (problem) return `${pathOf(visit)}: a key ${problem}`;
          stack.push({ value: entry, key, parent: visit, depth: visit.depth + 1 });
        }
      }
    }
  }
  return undefined;
}

/** Text to store as a record of what was received: NULs and unpaired surrogates become U+FFFD. */
export function storableText(text: string): string {
  return text.includes('\u0000') || !text.isWellFormed() ? text.toWellFormed().replaceAll('\u0000', '\uFFFD') : text;
}

/**
 * What jsonb cannot hold, as JSON.stringify writes it: exactly the `\u0000` and `\udXXX` escapes (a
 * paired surrogate is written as it is), found in its text without a walk of the value. An even run
 * of backslashes before one is an escaped backslash, not an escape.
 */
const UNSTORABLE_ESCAPE = /(\\+)u(0000|d[89a-f][0-9a-f]{2})/g;

/**
 * A JSON value to store as a record of what was received (a received email, an MCP server's answer,
 * a tool's result): storableText's rule applied to every string and key, at any depth JSON.stringify
 * takes, and how many characters it replaced.
 */
export function storableJson<T>(value: T): { value: T; replaced: number } {
  let replaced = 0;
  const json = JSON.stringify(value ?? null).replace(UNSTORABLE_ESCAPE, (match, slashes: string) => {
    if (slashes.length % 2 === 0) return match;
    replaced++;
    return `${slashes.slice(1)}\uFFFD`;
  });
  return { value: JSON.parse(json), replaced };
}

export const REPLACED_NOTE = (replaced: number) =>
  `${replaced} character${replaced === 1 ? '' : 's'} of it (NUL or unpaired surrogates) could not be stored and ` +
  `${replaced === 1 ? 'was' : 'were'} replaced by U+FFFD`;
