import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

/**
 * Outbound HTTP to URLs that users give us (callback endpoints): only public unicast addresses, checked
 * when the URL is configured and again when a connection is made (a name may resolve elsewhere by
 * then), never following redirects, with a deadline and a bounded response.
 */

/**
 * IPv6 that ipaddr.js ranks unicast but that is not public, refused whole. Forms that carry an IPv4
 * address: IPv4-compatible ::/96 (deprecated since RFC 4291; Node writes `[::127.0.0.1]` as
 * `[::7f00:1]`), NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16 and Teredo 2001::/32
 * (IPv4-mapped ::ffff:0:0/96 is checked as the IPv4 address it maps). And site-local fec0::/10:
 * deprecated (RFC 3879) but still routed inside some networks, as private as unique-local fc00::/7.
 */
const NOT_PUBLIC_IPV6 = ['::/96', '64:ff9b::/96', '64:ff9b:1::/48', '2002::/16', '2001::/32', 'fec0::/10'];
const notPublicIpv6 = NOT_PUBLIC_IPV6.map((cidr) => ipaddr.parseCIDR(cidr));

/** Public unicast only: not loopback, private, link-local (cloud metadata), unique-local, CGNAT, reserved, IPv4 inside IPv6... */
export function isPublicAddress(address: string): boolean {
  try {
    const parsed = ipaddr.process(address);
    if (parsed.range() !== 'unicast') return false;
    return !(parsed.kind() === 'ipv6' && notPublicIpv6.some((cidr) => parsed.match(cidr)));
  } catch {
    return false;
  }
}

/** Why the URL may not be called, or null when it may. Names are resolved: every address must be public. */
export async function outboundUrlProblem(raw: string, options: { allowPrivateNetworks: boolean }): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  // Port 0 reaches nothing (connecting to it fails in ways that read as other faults).
  if (url.port === '0') return 'port 0 is not a port a server listens on';
  if (options.allowPrivateNetworks) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isPublicAddress(host) ? null : `${host} is not a public address`;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    return `${host} does not resolve`;
  }
  const blocked = addresses.find(({ address }) => !isPublicAddress(address));
  return blocked ? `${host} resolves to ${blocked.address}, which is not a public address` : null;
}

export interface GuardedHttpAgents {
  http: http.Agent;
  https: https.Agent;
  destroy(): void;
}

/** Keep-alive agents that refuse, at connect time, any address outboundUrlProblem would refuse. */
export function createGuardedHttpAgents(options: { allowPrivateNetworks: boolean; maxSockets?: number }): GuardedHttpAgents {
  const common = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? 256,
    allowPrivateIPAddress: options.allowPrivateNetworks,
    allowMetaIPAddress: options.allowPrivateNetworks,
    // The agents refuse what is not unicast; isPublicAddress's extra refusals are added here.
    denyIPAddressList: options.allowPrivateNetworks ? [] : NOT_PUBLIC_IPV6,
  };
  const agents = { http: new RequestFilteringHttpAgent(common), https: new RequestFilteringHttpsAgent(common) };
  return {
    ...agents,
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
