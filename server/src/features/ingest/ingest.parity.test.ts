import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { eventually } from '../../../test/helpers/eventually.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { rawRequest } from '../../../test/helpers/http.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';
import { signingHeaders } from './verification.ts';

/**
 * Ingest has one handler: the HTTP server hands posts to the fast path, and the Fastify routes that
 * document them (reachable with `app.inject`) hand over to it too. Every answer of the matrix, each
 * from a state of its own, comes out the same both ways: status, headers and body.
 */
let app: TestApp;
let fastify: FastifyInstance;
beforeAll(async () => {
  app = await startTestApp(
    {},
    {
      workers: false,
      routes: (instance) => {
        fastify = instance as unknown as FastifyInstance;
      },
    },
  );
});
afterAll(async () => app?.close());

interface Post {
  path: string;
  body: string;
  headers: Record<string, string>;
}
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Whether a new TCP connection to the server is accepted. */
function accepts(baseUrl: string): Promise<boolean> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** What may differ between two answers to the same post: the moment, the connection, new ids. */
const VOLATILE_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
function comparable(status: number, headers: Record<string, string>, text: string): Answer {
  const kept = Object.fromEntries(Object.entries(headers).filter(([name]) => !VOLATILE_HEADERS.has(name)));
  const body = JSON.parse(text, (key, value) => (key === 'actionId' || key === 'eventId' ? 'uuid' : value));
  return { status, headers: kept, body };
}

async function throughFastPath(post: Post): Promise<Answer> {
  const response = await app.request('POST', post.path, { body: post.body, headers: post.headers });
  return comparable(response.status, Object.fromEntries(response.headers), await response.text());
}

async function throughFastifyRoute(post: Post): Promise<Answer> {
  const response = await fastify.inject({ method: 'POST', url: post.path, payload: post.body, headers: post.headers });
  return comparable(
    response.statusCode,
    Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name, String(value)])),
    response.body,
  );
}

const signed = (setup: WebhookSetup, payload: unknown, extra: Record<string, string> = {}): Post => {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return {
    path: setup.path,
    body,
    headers: {
      'content-type': 'application/json',
      ...signingHeaders(setup.webhook.verificationScheme, setup.secret, body, {
        nowSeconds: Math.floor(app.clock.now().getTime() / 1000),
      }),
      ...extra,
    },
  };
};

/** Each case makes its own state twice (once per way), then returns the post to compare after `warmUp` posts. */
const CASES: Record<string, { expected: number; make: () => Promise<{ post: Post; warmUp?: Post[] }> }> = {
  'a webhook that does not exist': {
    expected: 404,
    make: async () => ({
      post: signed({ ...(await setupWebhook(app)), path: '/webhooks/actions/nobody/nothing' }, { eventType: 'x' }),
    }),
  },
  'a disabled webhook': {
    expected: 403,
    make: async () => ({ post: signed(await setupWebhook(app, { enabled: false }), { eventType: 'x' }) }),
  },
  "a body over the webhook's size limit": {
    expected: 413,
    make: async () => ({
      post: signed(await setupWebhook(app, { maxPayloadBytes: 1024 }), { eventType: 'x', data: { text: 'y'.repeat(2000) } }),
    }),
  },
  'no signature': {
    expected: 401,
    make: async () => ({
      post: { ...signed(await setupWebhook(app), { eventType: 'x' }), headers: { 'content-type': 'application/json' } },
    }),
  },
  'a signed body that is not JSON': { expected: 400, make: async () => ({ post: signed(await setupWebhook(app), 'not json') }) },
  "the webhook's rate limit": {
    expected: 429,
    make: async () => {
      const setup = await setupWebhook(app, { rateLimitPerMinute: 1 });
      return {
        warmUp: [signed(setup, { eventType: 'x', externalId: 'first' })],
        post: signed(setup, { eventType: 'x', externalId: 'second' }),
      };
    },
  },
  'an event that becomes an action': {
    expected: 200,
    make: async () => ({ post: signed(await setupWebhook(app), { eventType: 'order.created', externalId: 'o-1' }) }),
  },
  'an event its webhook filters out': {
    expected: 202,
    make: async () => ({ post: signed(await setupWebhook(app, { eventFilter: ['order.*'] }), { eventType: 'invoice.paid' }) }),
  },
};

describe('ingest answers the same through the fast path and through the Fastify route', () => {
  for (const [name, { expected, make }] of Object.entries(CASES)) {
    it(`${expected}: ${name}`, async () => {
      const answers: Answer[] = [];
      for (const send of [throughFastPath, throughFastifyRoute]) {
        const { post, warmUp = [] } = await make();
        for (const earlier of warmUp) await send(earlier);
        answers.push(await send(post));
      }
      expect(answers[0]!.status).toBe(expected);
      expect(answers[1]).toEqual(answers[0]);
    });
  }

  it('503 while the server closes, from the fast path and from a Fastify route alike', async () => {
    const answers: Answer[] = [];
    for (const route of ['ingest', 'a Fastify route'] as const) {
      const closing = await startTestApp({}, { workers: false });
      const setup = await setupWebhook(closing);
      const post =
        route === 'ingest'
          ? signed(setup, { eventType: 'x' })
          : { path: '/auth/login/credentials', body: '{}', headers: { 'content-type': 'application/json' } };
      const headers = { host: '127.0.0.1', 'content-length': String(Buffer.byteLength(post.body)), ...post.headers };
      let closed: Promise<void> | undefined;
      try {
        // The request line, then closing begins, then the headers: the request arrives while the server closes.
        const raw = await rawRequest(
          closing.baseUrl,
          `POST ${post.path} HTTP/1.1\r\n`,
          `${Object.entries(headers)
            .map(([name, value]) => `${name}: ${value}`)
            .join('\r\n')}\r\n\r\n${post.body}`,
          async () => {
            closed = closing.close();
            // Closing has begun once the server stops accepting new connections.
            await eventually('the server to stop accepting connections', async () =>
              (await accepts(closing.baseUrl)) ? undefined : true,
            );
          },
        );
        const [head, body] = raw.split('\r\n\r\n');
        const [statusLine, ...lines] = head!.split('\r\n');
        const responseHeaders = Object.fromEntries(
          lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
        );
        expect(responseHeaders.connection).toBe('close');
        answers.push(comparable(Number(statusLine!.split(' ')[1]), responseHeaders, body!));
      } finally {
        await (closed ?? closing.close());
      }
    }
    expect({ status: answers[0]!.status, body: answers[0]!.body }).toEqual({
      status: 503,
      body: { error: 'The service is shutting down', code: 'not_ready' },
    });
    expect(answers[1]).toEqual(answers[0]);
  });
});
