import http from 'node:http';
import https from 'node:https';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { type AddressGuard, guardedLookup, refusedUrlAddress } from './address-guard.ts';

/**
 * Outbound HTTP to URLs that users give us (callback endpoints), through the address guard
 * (address-guard.ts) when a connection is made, never following redirects, with a deadline and a
 * bounded response.
 */

export interface GuardedHttpAgents {
  http: http.Agent;
  https: https.Agent;
  guard: AddressGuard;
  destroy(): void;
}

/** Keep-alive agents that refuse, at connect time, any address outboundUrlProblem would refuse. */
export function createGuardedHttpAgents(options: AddressGuard & { maxSockets?: number }): GuardedHttpAgents {
  const guard = { allowPrivateNetworks: options.allowPrivateNetworks };
  const common = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? 256,
    // The library refuses what is not unicast (unless private networks are allowed); the guard's
    // lookup refuses the rest (IPv4 inside IPv6, site-local, metadata services). An address written
    // in the URL has no lookup: postOnce checks it.
    allowPrivateIPAddress: options.allowPrivateNetworks,
    allowMetaIPAddress: options.allowPrivateNetworks,
    lookup: guardedLookup(guard),
  };
  const agents = { http: new RequestFilteringHttpAgent(common), https: new RequestFilteringHttpsAgent(common) };
  return {
    ...agents,
    guard,
    destroy: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The start of the body, at most `keepBodyBytes`. */
  body: string;
}

/** Reads at most this much of a response before giving up on the connection. */
const MAX_READ_BYTES = 64 * 1024;

/** One POST; a 3xx is returned as it is (never followed). Throws on network errors and the deadline. */
export function postOnce(
  agents: GuardedHttpAgents,
  url: string,
  request: { headers: Record<string, string>; body: string; timeoutMs: number; keepBodyBytes: number },
): Promise<OutboundResponse> {
  return new Promise((outcome, failure) => {
    const target = new URL(url);
    const refused = refusedUrlAddress(target, agents.guard);
    if (refused) return failure(refused);
    const transport = target.protocol === 'https:' ? https : http;
    const body = Buffer.from(request.body);
    // The deadline is a timer that destroys the request, cleared when the call ends. Not lib/deadline's
    // AbortSignal: the request's abort listeners, and AbortSignal.timeout's timer firing long after the
    // call, were 3.5% of the dispatcher's busy CPU in bench:callbacks.
    const timedOut = () => new Error(`timed out after ${request.timeoutMs / 1000} s`);
    let expired = false;
    const timeout = setTimeout(() => {
      expired = true;
      req.destroy(timedOut());
    }, request.timeoutMs);
    const resolve = (response: OutboundResponse) => {
      clearTimeout(timeout);
      outcome(response);
    };
    const reject = (error: Error) => {
      clearTimeout(timeout);
      failure(error);
    };
    const req = transport.request(
      target,
      {
        method: 'POST',
        agent: target.protocol === 'https:' ? agents.https : agents.http,
        headers: { ...request.headers, 'content-length': String(body.length) },
      },
      (res) => {
        const kept: Buffer[] = [];
        let keptBytes = 0;
        let readBytes = 0;
        res.on('data', (chunk: Buffer) => {
          readBytes += chunk.length;
          if (keptBytes < request.keepBodyBytes) {
            kept.push(chunk.subarray(0, request.keepBodyBytes - keptBytes));
            keptBytes += Math.min(chunk.length, request.keepBodyBytes - keptBytes);
          }
          // A receiver that streams a huge answer loses its connection, not our memory.
          if (readBytes > MAX_READ_BYTES) res.destroy();
        });
        const done = () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(kept).toString('utf8') });
        res.on('end', done);
        // Cut off by us (too long an answer: its status stands) or by the deadline or the peer (an error).
        res.on('close', () => {
          if (res.complete) return;
          if (readBytes > MAX_READ_BYTES) done();
          else if (expired) reject(timedOut());
          else reject(new Error(`the answer was cut off${res.errored ? `: ${res.errored.message}` : ''}`));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
