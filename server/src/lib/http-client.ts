import { Agent, type Dispatcher } from 'undici';
import { type AddressGuard, guardedLookup, OutboundRefused, refusedUrlAddress } from './address-guard.ts';

/**
 * Outbound HTTP to URLs that users give us (callback endpoints), through the address guard
 * (address-guard.ts) when a connection is made, never following redirects, with a deadline and a
 * bounded response. On undici's dispatch API: node:http's request, response and agent machinery cost
 * the dispatcher about twice the CPU per POST (docs/benchmarks.md, the seventy-third session).
 */

export interface GuardedHttpClient {
  dispatcher: Dispatcher;
  guard: AddressGuard;
  close(): Promise<void>;
}

/** Kept-alive connections that refuse, at connect time, any address outboundUrlProblem would refuse. */
export function createGuardedHttpClient(
  options: AddressGuard & { connectTimeoutMs: number; maxConnectionsPerOrigin?: number },
): GuardedHttpClient {
  const guard = { allowPrivateNetworks: options.allowPrivateNetworks };
  // The lookup refuses a name with any address the guard refuses; an address written in the URL has
  // no lookup: postOnce checks it.
  const dispatcher = new Agent({
    connect: { timeout: options.connectTimeoutMs, lookup: guardedLookup(guard) },
    connections: options.maxConnectionsPerOrigin ?? 256,
    // HTTP/1.1 whatever the receiver's server offers, as callbacks have always been sent.
    allowH2: false,
  });
  return { dispatcher, guard, close: () => dispatcher.close() };
}

export interface OutboundResponse {
  status: number;
  /** Lower-case names; a repeated header is an array. */
  headers: Record<string, string | string[] | undefined>;
  /** The start of the body, at most `keepBodyBytes`. */
  body: string;
}

/** Reads at most this much of a response before giving up on the connection. */
const MAX_READ_BYTES = 64 * 1024;

/** What is kept of an answer as it arrives: its status, its headers and the start of its body. */
function keptAnswer(keepBodyBytes: number) {
  let status = 0;
  let headers: OutboundResponse['headers'] = {};
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let readBytes = 0;
  return {
    /** Whether the status and headers came (a failure after them cut the answer off). */
    started: () => status !== 0,
    start(statusCode: number, responseHeaders: OutboundResponse['headers']) {
      status = statusCode;
      headers = responseHeaders;
    },
    /** Keeps what is left of `keepBodyBytes`; false once more than MAX_READ_BYTES came. */
    add(chunk: Buffer): boolean {
      readBytes += chunk.length;
      if (keptBytes < keepBodyBytes) {
        const part = chunk.subarray(0, keepBodyBytes - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      return readBytes <= MAX_READ_BYTES;
    },
    response: (): OutboundResponse => ({ status, headers, body: Buffer.concat(kept).toString('utf8') }),
  };
}

/**
 * One POST; a 3xx is returned as it is (never followed). Throws on network errors and the deadline,
 * which covers the whole call: connecting, sending and reading the answer.
 */
export function postOnce(
  client: GuardedHttpClient,
  url: string,
  request: { headers: Record<string, string>; body: string; timeoutMs: number; keepBodyBytes: number },
): Promise<OutboundResponse> {
  return new Promise((outcome, failure) => {
    const target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:')
      return failure(new OutboundRefused(`${target.protocol} URLs are not called`));
    const refused = refusedUrlAddress(target, client.guard);
    if (refused) return failure(refused);
    const answer = keptAnswer(request.keepBodyBytes);
    let controller: Dispatcher.DispatchController | undefined;
    let ended = false;
    // The deadline is a timer that aborts the request, cleared when the call ends. Not lib/deadline's
    // AbortSignal: its listeners, and AbortSignal.timeout's timer firing long after the call, were 3.5%
    // of the dispatcher's busy CPU in bench:callbacks.
    const timedOut = () => new Error(`timed out after ${request.timeoutMs / 1000} s`);
    const timeout = setTimeout(() => {
      // Settled first: the abort calls onResponseError at once, which would say "cut off" instead.
      const error = timedOut();
      settle(() => failure(error));
      controller?.abort(error);
    }, request.timeoutMs);
    function settle(how: () => void) {
      if (ended) return;
      ended = true;
      clearTimeout(timeout);
      how();
    }
    const resolve = () => settle(() => outcome(answer.response()));
    // undici reports a request it cannot send as written (a header value, a path) to onResponseError too.
    client.dispatcher.dispatch(
      {
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        // The deadline above is the only one: undici's own would end a slow call with other messages.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      {
        onRequestStart(started) {
          controller = started;
          // The deadline passed before the request reached a connection.
          if (ended) started.abort(timedOut());
        },
        onResponseStart: (_controller, statusCode, headers) => answer.start(statusCode, headers as OutboundResponse['headers']),
        onResponseData(current, chunk) {
          if (answer.add(chunk)) return;
          // A receiver that streams a huge answer loses its connection, not our memory; its status stands.
          resolve();
          current.abort(new Error('the answer was too long; the connection was closed'));
        },
        onResponseEnd: resolve,
        onResponseError(_controller, error) {
          settle(() => failure(answer.started() ? new Error(`the answer was cut off: ${error.message}`) : error));
        },
      },
    );
  });
}
