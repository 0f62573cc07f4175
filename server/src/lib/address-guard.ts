import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which addresses the URLs that users give us (callback endpoints, MCP servers) may reach: only
 * public unicast ones; or, where the operator allows private networks, any but a cloud metadata
 * service. Checked when the URL is saved and again when a connection is made (a name may resolve
 * elsewhere by then).
 */
export interface AddressGuard {
  allowPrivateNetworks: boolean;
}

/** The guard refused an address: nothing was sent. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
}

/**
 * IPv6 that ipaddr.js ranks unicast but that is not public, refused whole. Forms that carry an IPv4
 * address: IPv4-compatible ::/96 (deprecated since RFC 4291; Node writes `[::127.0.0.1]` as
 * `[::7f00:1]`), NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16 and Teredo 2001::/32
 * (IPv4-mapped ::ffff:0:0/96 is checked as the IPv4 address it maps). And site-local fec0::/10:
 * deprecated (RFC 3879) but still routed inside some networks, as private as unique-local fc00::/7.
 */
const notPublicIpv6 = ['::/96', '64:ff9b::/96', '64:ff9b:1::/48', '2002::/16', '2001::/32', 'fec0::/10'].map((cidr) =>
  ipaddr.parseCIDR(cidr),
);

/**
 * Cloud instance metadata services, refused even where private networks are allowed: an org's URL
 * there would read the host's credentials. Link-local 169.254.0.0/16 (AWS, GCP, Azure, Oracle, ECS
 * task metadata) and fe80::/10, AWS's IPv6 endpoint, Alibaba Cloud's, and 169.254/16 inside
 * IPv4-compatible and NAT64 IPv6 (IPv4-mapped is checked as the IPv4 address it maps).
 */
const metadataRanges = [
  '169.254.0.0/16',
  '100.100.100.200/32',
  'fe80::/10',
  'fd00:ec2::254/128',
  '::a9fe:0/112',
  '64:ff9b::a9fe:0/112',
].map((cidr) => ipaddr.parseCIDR(cidr));

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

export function isMetadataAddress(address: string): boolean {
  // Dotted IPv4 (as URLs and lookups give it) without parsing: a callback's delivery checks its address each time.
  if (isIP(address) === 4) return address.startsWith('169.254.') || address === '100.100.100.200';
  try {
    const parsed = ipaddr.process(address);
    return metadataRanges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits));
  } catch {
    return true; // not an address: refused as one would be
  }
}

/** What an address is that the guard refuses ("not a public address"), or null when it may be reached. */
export function refusedAddressKind(address: string, guard: AddressGuard): string | null {
  if (guard.allowPrivateNetworks) return isMetadataAddress(address) ? 'a cloud metadata address, never called' : null;
  return isPublicAddress(address) ? null : 'not a public address';
}

/** Why the URL may not be called, or null when it may. Names are resolved: every address must pass. */
export async function outboundUrlProblem(raw: string, guard: AddressGuard): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a valid URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  // Port 0 reaches nothing (connecting to it fails in ways that read as other faults).
  if (url.port === '0') return 'port 0 is not a port a server listens on';
  const host = hostOf(url);
  if (isIP(host)) return refusedUrlAddress(url, guard)?.message ?? null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    // A private network's name may resolve only where the connections are made: checked there.
    return guard.allowPrivateNetworks ? null : `${host} does not resolve`;
  }
  for (const { address } of addresses) {
    const refused = refusedAddressKind(address, guard);
    if (refused) return `${host} resolves to ${address}, which is ${refused}`;
  }
  return null;
}

/** A URL's host as a lookup or an address check takes it: an IPv6 address without its brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/** The address written in a URL that the guard refuses (connected to without a lookup), as an error; else null. */
export function refusedUrlAddress(url: URL, guard: AddressGuard): OutboundRefused | null {
  const host = hostOf(url);
  const refused = isIP(host) ? refusedAddressKind(host, guard) : null;
  return refused ? new OutboundRefused(`${host} is ${refused}`) : null;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Lookup = (
  hostname: string,
  options: { all: true },
  callback: (error: Error | null, addresses: LookupAddress[]) => void,
) => void;

/** A connection's dns.lookup that fails when any address of the name is one the guard refuses. */
export const guardedLookup =
  (guard: AddressGuard, resolve: Lookup = dnsLookup) =>
  (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const refused = refusedAddressKind(address, guard);
        if (refused) return callback(new OutboundRefused(`${hostname} resolves to ${address}, which is ${refused}`), []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
