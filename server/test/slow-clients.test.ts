import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './helpers/eventually.ts';
import { startTestApp, type TestApp } from './helpers/test-app.ts';
import { postEvent, setupWebhook } from './helpers/webhooks.ts';

/**
 * Senders that trickle their request hold nothing for long: headers and the whole request each have
 * a deadline (408 with the API's body, connection closed), on the ingest fast path and on Fastify's
 * routes alike, and ingest bodies being received at once are capped.
 */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(
    { HTTP_HEADERS_TIMEOUT_SECONDS: '1', HTTP_REQUEST_TIMEOUT_SECONDS: '2', INGEST_MAX_PENDING_BODIES: '2' },
    { workers: false },
  );
});
afterAll(async () => app?.close());

/** A raw connection that sends `head`, then one byte of `trickle` every 200 ms until the server closes it; resolves with what the server wrote. */
function trickle(head: string, trickleBytes: string): { socket: Socket; answer: Promise<{ text: string; afterMs: number }> } {
  const { port } = new URL(app.baseUrl);
  const socket = connect(Number(port), '127.0.0.1');
  const started = performance.now();
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => {});
  socket.write(head);
  let index = 0;
  const timer = setInterval(() => {
    if (!socket.writable) return;
    socket.write(trickleBytes[index++ % trickleBytes.length]!);
  }, 200);
  const answer = new Promise<{ text: string; afterMs: number }>((resolve) => {
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ text: received, afterMs: performance.now() - started });
    });
  });
  return { socket, answer };
}

const statusOf = (text: string) => Number(text.slice(9, 12));
const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe('slow clients', () => {
  it('a body trickled to an ingest URL gets 408 once HTTP_REQUEST_TIMEOUT_SECONDS pass', async () => {
    const setup = await setupWebhook(app);
    const { answer } = trickle(
      `POST ${setup.path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
      ' ',
    );
    const { text, afterMs } = await answer;
    expect(statusOf(text)).toBe(408);
    expect(bodyOf(text)).toEqual({ error: 'The request was not received in time', code: 'request_timeout' });
    expect(text.toLowerCase()).toContain('x-content-type-options: nosniff');
    expect(afterMs).toBeLessThan(10_000);
  });

  it('a body trickled to a Fastify route, and headers trickled to any URL, get 408 too', async () => {
    const body = trickle(
      'POST /auth/login/credentials HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
      ' ',
    );
    const headers = trickle('GET /healthz HTTP/1.1\r\nHost: localhost\r\n', 'X');
    for (const { answer } of [body, headers]) {
      const { text } = await answer;
      expect(statusOf(text)).toBe(408);
      expect(bodyOf(text).code).toBe('request_timeout');
    }
  });

  it('past INGEST_MAX_PENDING_BODIES bodies being received, a post gets 503 at once; once they end, posts are taken again', async () => {
    const setup = await setupWebhook(app);
    const slow = [0, 1].map(() =>
      trickle(
        `POST ${setup.path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
        ' ',
      ),
    );
    await eventually('both slow bodies being received', async () =>
      (await app.container.metrics.ingestPendingBodies.get()).values[0]?.value === 2 ? true : undefined,
    );
    const refused = await postEvent(app, setup, { eventType: 'x' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      error: 'Too many requests are sending their bodies at once; try again shortly',
      code: 'overloaded',
    });
    for (const { answer } of slow) expect(statusOf((await answer).text)).toBe(408);
    expect((await postEvent(app, setup, { eventType: 'x' })).status).toBe(200);
  });
});
