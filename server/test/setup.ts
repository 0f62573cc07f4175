/**
 * Outbound HTTP from a test may only reach loopback, where the tests' own servers play the model
 * provider, the mail provider and the OAuth providers. Anything else is a test bug.
 */
const realFetch = globalThis.fetch;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!LOOPBACK.has(url.hostname)) {
    throw new Error(`Unexpected outbound HTTP to ${url.origin} during a test; only loopback servers are allowed`);
  }
  return realFetch(input, init);
}) as typeof fetch;
