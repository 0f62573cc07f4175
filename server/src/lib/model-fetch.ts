import { Readable } from 'node:stream';
import { type Dispatcher, request } from 'undici';

/**
 * The fetch the model providers' clients (the AI SDK) call, on undici's request API instead of the
 * WHATWG fetch algorithm: the same HTTP, without what fetch adds per call (its request and response
 * objects' web streams, abort-signal chains, a DOMException per abort). Those were most of the CPU a
 * model call cost the service (docs/benchmarks.md). A JSON answer is read whole and handed back as a
 * Response over its bytes; an event stream is streamed. Requests it does not handle the same way
 * (a body that is not a string, a Request object) go to the global fetch.
 */
export function createModelFetch(options: { dispatcher?: Dispatcher } = {}): typeof fetch {
  const modelFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (input instanceof Request || (init?.body != null && typeof init.body !== 'string')) return fetch(input, init);
    const { statusCode, headers, body } = await request(String(input), {
      method: (init?.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: plainHeaders(init?.headers),
      body: init?.body ?? null,
      signal: init?.signal ?? undefined,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
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
    const content = streamed ? (Readable.toWeb(body) as ReadableStream<Uint8Array>) : new Uint8Array(await body.arrayBuffer());
    return new Response(content, { status: statusCode, headers: responseHeaders });
  };
  return modelFetch as typeof fetch;
}

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

function plainHeaders(headers: HeadersInit | undefined): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers || Array.isArray(headers)) return Object.fromEntries(headers as Iterable<[string, string]>);
  return headers as Record<string, string>;
}
