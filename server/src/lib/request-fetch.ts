import { type Dispatcher, getGlobalDispatcher, interceptors, request } from 'undici';
import { readableBounded, readBounded } from './bounded-body.ts';

/**
 * fetch for the service's calls to the APIs it is configured with (the model providers, through the
 * AI SDK; the mail provider), on undici's request API instead of the WHATWG fetch algorithm: the same
 * HTTP without what fetch adds to each call (web streams for its request and response, chains of
 * abort signals, a DOMException per abort). Those were most of the CPU a model call cost the service
 * (docs/benchmarks.md). A JSON answer is read whole and handed back as a Response over its bytes; an
 * event stream is streamed; either is bounded by `maxResponseBytes`. Redirects are handled as fetch
 * handles them: `follow` (the default) follows up to 20, `error` fails on one, `manual` returns it. A
 * request this one does not take the same way (a Request object, a body that is not a string) goes
 * to `fallback`.
 */
export function createRequestFetch(
  options: {
    dispatcher?: Dispatcher;
    /** A body longer than this, read whole or streamed, fails its read with `tooLarge()` (the connection is cut). */
    maxResponseBytes?: number;
    tooLarge?: () => Error;
    /** Where a request this one does not take goes (the global fetch unless given). */
    fallback?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  } = {},
): typeof fetch {
  const maxResponseBytes = options.maxResponseBytes ?? 64 * 1024 * 1024;
  const tooLarge =
    options.tooLarge ??
    (() => new TypeError('fetch failed', { cause: new Error(`the response was larger than ${maxResponseBytes} bytes`) }));
  const fallback = options.fallback ?? fetch;
  const direct = options.dispatcher ?? getGlobalDispatcher();
  const following = direct.compose(interceptors.redirect({ maxRedirections: 20, throwOnMaxRedirect: true }));
  const requestFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (input instanceof Request || (init?.body != null && typeof init.body !== 'string')) return fallback(input, init);
    const redirect = init?.redirect ?? 'follow';
    const { statusCode, headers, body } = await request(String(input), {
      method: (init?.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: plainHeaders(init?.headers),
      body: init?.body ?? null,
      signal: init?.signal ?? undefined,
      dispatcher: redirect === 'follow' ? following : direct,
    });
    if (redirect === 'error' && REDIRECT_STATUSES.has(statusCode)) {
      await body.dump();
      throw new TypeError('fetch failed', { cause: new Error('unexpected redirect') });
    }
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(headers)) {
      if (Array.isArray(value)) for (const each of value) responseHeaders.append(name, each);
      else if (value !== undefined) responseHeaders.set(name, value);
    }
    if (NULL_BODY_STATUSES.has(statusCode)) {
      await body.dump();
      return new Response(null, { status: statusCode, headers: responseHeaders });
    }
    const streamed = responseHeaders.get('content-type')?.startsWith('text/event-stream');
    const content = streamed
      ? readableBounded(body, maxResponseBytes, tooLarge)
      : await readBounded(body, maxResponseBytes, tooLarge);
    return new Response(content as BodyInit, { status: statusCode, headers: responseHeaders });
  };
  return requestFetch as typeof fetch;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

function plainHeaders(headers: HeadersInit | undefined): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers || Array.isArray(headers)) return Object.fromEntries(headers as Iterable<[string, string]>);
  return headers as Record<string, string>;
}
