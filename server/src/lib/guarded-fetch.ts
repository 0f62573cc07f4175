import { Agent, fetch as undiciFetch } from 'undici';
import { type AddressGuard, guardedLookup, OutboundRefused, refusedUrlAddress } from './address-guard.ts';
import { createRequestFetch } from './request-fetch.ts';

/**
 * fetch for URLs that users give us (MCP servers), with the address guard the callbacks' agents
 * have (address-guard.ts: checked when the connection is made, whatever the name resolved to
 * before), no redirects, a connect timeout, kept-alive connections, and a bound on how much of one
 * response is read.
 */
export interface GuardedFetchOptions extends AddressGuard {
  connectTimeoutMs: number;
  /** A response body longer than this fails the read (the connection is cut). */
  maxResponseBytes: number;
}

export type GuardedFetch = ((input: string | URL | Request, init?: RequestInit) => Promise<Response>) & {
  close(): Promise<void>;
};

/** The server answered with more than the bound: the request was sent, and its answer not read. */
export class ResponseTooLarge extends Error {
  override name = 'ResponseTooLarge';
  readonly limit: number;
  constructor(limit: number) {
    super(`the response was larger than ${limit} bytes; it was not read`);
    this.limit = limit;
  }
}

export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const agent = new Agent({
    connect: {
      timeout: options.connectTimeoutMs,
      lookup: guardedLookup(options),
    },
    keepAliveTimeout: 30_000,
  });
  // On undici's request API, as the model calls are (the WHATWG fetch algorithm cost the service more
  // CPU than the rest of an MCP call); what it does not take (an OAuth token request's form body)
  // through fetch itself, on the same guarded agent and bound.
  const direct = createRequestFetch({
    dispatcher: agent,
    maxResponseBytes: options.maxResponseBytes,
    tooLarge: () => new ResponseTooLarge(options.maxResponseBytes),
    fallback: async (input, init) =>
      bounded(
        (await undiciFetch(input as Parameters<typeof undiciFetch>[0], {
          ...(init as Parameters<typeof undiciFetch>[1]),
          dispatcher: agent,
        })) as unknown as Response,
        options.maxResponseBytes,
      ),
  });
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused(`${url.protocol} URLs are not fetched`);
    // An address in the URL is connected to without a lookup: it is checked here.
    const refused = refusedUrlAddress(url, options);
    if (refused) throw refused;
    const response = await direct(input, { ...init, redirect: 'manual' });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      throw new OutboundRefused(`redirect to ${response.headers.get('location') ?? '(no location)'} not followed`);
    }
    return response;
  };
  return Object.assign(guarded, { close: () => agent.close() });
}

/** The same response, whose body errors once more than `maxBytes` of it have been read. */
function bounded(response: Response, maxBytes: number): Response {
  if (!response.body) return response;
  let read = 0;
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      read += chunk.byteLength;
      if (read > maxBytes) controller.error(new ResponseTooLarge(maxBytes));
      else controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(limit), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
