import { connect } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A port held by this process until `release`: a test app's setup (its database, migrations) takes
 * seconds, and a port only probed and let go at its start could be taken meanwhile by another test
 * file's server (EADDRINUSE when the app listens). Release it right before listening on it.
 */
export async function reservePort(): Promise<{ port: number; release: () => Promise<void> }> {
  // Below Linux's ephemeral range (32768 and up): a port the system handed out for listen(0) could
  // be taken as the source port of some outgoing connection (a driver's, the browser's) in the
  // moment before the app listens on it.
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) return { port, release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }
}

/** A port free now, for a server that listens on it at once (a spawned process: see reservePort for in-process apps). */
export async function freePort(): Promise<number> {
  const { port, release } = await reservePort();
  await release();
  return port;
}

/** A real HTTP server on loopback, for playing an outside service in a test. */
export async function startLoopbackServer(
  handler: (request: IncomingMessage, response: ServerResponse, body: string) => unknown,
) {
  const server: Server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      Promise.resolve(handler(request, response, body)).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** An event stream in two writes, the second `gapMs` later and ending it: a reader sees them arrive apart. */
export function sendEvents(response: ServerResponse, first: string, last: string, gapMs = 20) {
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.write(first);
  setTimeout(() => response.end(last), gapMs);
}

/** The name=value pairs of every Set-Cookie header of a response. */
export function setCookies(response: { headers: Headers }): Map<string, { value: string; attributes: string }> {
  const cookies = new Map<string, { value: string; attributes: string }>();
  for (const header of response.headers.getSetCookie()) {
    const [pair = '', ...attributes] = header.split(';');
    const index = pair.indexOf('=');
    cookies.set(pair.slice(0, index).trim(), { value: pair.slice(index + 1), attributes: attributes.join(';').trim() });
  }
  return cookies;
}

/** A request written by hand: `head` first, then `beforeRest` (e.g. start closing the server), then `rest`; resolves with all that came back. */
export function rawRequest(baseUrl: string, head: string, rest: string, beforeRest: () => Promise<void>): Promise<string> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(head);
      void new Promise((wait) => setTimeout(wait, 50)).then(beforeRest).then(() => socket.write(rest), reject);
    });
  });
}
