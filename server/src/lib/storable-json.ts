/**
 * PostgreSQL's jsonb cannot hold U+0000 nor an unpaired UTF-16 surrogate, which JSON (and so any MCP
 * server, model or mail) can send. JSON.stringify writes exactly those as `\u0000` and `\udXXX`
 * escapes (a paired surrogate is written as it is), so they are found in its text without a walk of
 * the value; an even run of backslashes before one is an escaped backslash, not an escape.
 */
const UNSTORABLE_ESCAPE = /(\\+)u(0000|d[89a-f][0-9a-f]{2})/g;

/** The value as JSON that jsonb takes: each character it cannot hold replaced by U+FFFD, and how many were. */
export function storableJson(value: unknown): { value: unknown; replaced: number } {
  let replaced = 0;
  const json = JSON.stringify(value ?? null).replace(UNSTORABLE_ESCAPE, (match, slashes: string) => {
    if (slashes.length % 2 === 0) return match;
    replaced++;
    return `${slashes.slice(1)}\uFFFD`;
  });
  return { value: JSON.parse(json), replaced };
}

/** A string that jsonb and text columns take: NULs and unpaired surrogates replaced by U+FFFD. */
export const storableText = (text: string): string => text.toWellFormed().replaceAll('\u0000', '\uFFFD');

export const REPLACED_NOTE = (replaced: number) =>
  `${replaced} character${replaced === 1 ? '' : 's'} of it (NUL or unpaired surrogates) could not be stored and ` +
  `${replaced === 1 ? 'was' : 'were'} replaced by U+FFFD`;
