import net from 'node:net';

/**
 * Outbound connections from a test may only reach loopback, where the tests' own servers play the
 * model provider, the mail provider, the OAuth providers and the customers' receivers (and where
 * PostgreSQL and Redis run). Anything else is a test bug, and fails before a packet leaves:
 * fetch is checked by URL, and every TCP connection (node:http, node:net, pg, undici) by its host.
 */
const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\]|::ffff:127(\.\d{1,3}){3})$/;
const refuse = (target: string) =>
  new Error(`Unexpected outbound connection to ${target} during a test; only loopback servers are allowed`);

// A worker runs this before each of its files in one process (isolate: false): guard once.
const GUARDED = Symbol.for('agent-platform.test.outbound-guard');
const guarded = (globalThis as Record<symbol, unknown>)[GUARDED] === true;
(globalThis as Record<symbol, unknown>)[GUARDED] = true;

const realFetch = globalThis.fetch;
if (!guarded) {
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!LOOPBACK_HOST.test(url.hostname)) throw refuse(url.origin);
    return realFetch(input, init);
  }) as typeof fetch;
}

/** The host a Socket#connect call aims at; undefined for a Unix socket path. */
function hostOf(args: unknown[]): string | undefined {
  // Node's own callers (net.connect, http.Agent) pass their normalized [options, callback] pair.
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (typeof first === 'number') return typeof args[1] === 'string' ? args[1] : 'localhost';
  if (typeof first === 'object' && first !== null) {
    const options = first as { path?: string; host?: string };
    return options.path ? undefined : (options.host ?? 'localhost');
  }
  return undefined; // a path
}

const realConnect = net.Socket.prototype.connect;
if (!guarded)
  net.Socket.prototype.connect = function connect(this: net.Socket, ...args: unknown[]) {
    const host = hostOf(args);
    if (host !== undefined && !LOOPBACK_HOST.test(host)) {
      const error = refuse(host);
      process.nextTick(() => this.destroy(error));
      return this;
    }
    return (realConnect as (...rest: unknown[]) => net.Socket).apply(this, args);
  } as typeof realConnect;
