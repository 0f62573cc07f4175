import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createGuardedHttpClient, type OutboundResponse, postOnce } from '../../lib/http-client.ts';
import { judgeAttempt, parseRetryAfter } from './retry-policy.ts';

const SCHEDULE = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
const middle = () => 0.5; // no jitter
/** The attempt's time, from the dispatcher's clock: far from the wall clock, so that a read of the wall clock shows. */
const attemptedAt = new Date('2031-03-01T12:00:00Z');

describe('the retry schedule', () => {
  it('retries 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after each failed attempt, then dead-letters', () => {
    const delays = SCHEDULE.map(
      (_, index) => judgeAttempt({ statusCode: 500, attemptCount: index + 1, attemptedAt }, SCHEDULE, middle).delayMs,
    );
    expect(delays).toEqual(SCHEDULE);
    expect(judgeAttempt({ statusCode: 500, attemptCount: 8, attemptedAt }, SCHEDULE, middle)).toEqual({
      status: 'dead_lettered',
      delayMs: null,
      gone: false,
    });
  });

  it('jitters by at most 20% either way', () => {
    expect(judgeAttempt({ statusCode: null, attemptCount: 1, attemptedAt }, SCHEDULE, () => 0).delayMs).toBe(4_000);
    expect(judgeAttempt({ statusCode: null, attemptCount: 1, attemptedAt }, SCHEDULE, () => 0.999999).delayMs).toBe(6_000);
  });

  it('succeeds on 2xx only; 410 stops and disables; 3xx and 4xx are retried', () => {
    for (const status of [200, 201, 204, 299])
      expect(judgeAttempt({ statusCode: status, attemptCount: 1, attemptedAt }, SCHEDULE).status).toBe('succeeded');
    expect(judgeAttempt({ statusCode: 410, attemptCount: 1, attemptedAt }, SCHEDULE)).toEqual({
      status: 'failed',
      delayMs: null,
      gone: true,
    });
    for (const status of [301, 302, 400, 401, 404, 429, 500, 503])
      expect(judgeAttempt({ statusCode: status, attemptCount: 1, attemptedAt }, SCHEDULE).status).toBe('pending');
  });

  it('honours Retry-After within [scheduled, 2 x scheduled]', () => {
    const delayFor = (value: string) =>
      judgeAttempt({ statusCode: 429, retryAfter: value, attemptCount: 1, attemptedAt }, SCHEDULE, middle).delayMs;
    expect(delayFor('8')).toBe(8_000);
    expect(delayFor('1')).toBe(5_000);
    expect(delayFor('3600')).toBe(10_000);
    expect(delayFor('soon')).toBe(5_000);
    // An HTTP date is measured from the attempt's time.
    expect(delayFor(new Date(attemptedAt.getTime() + 7_000).toUTCString())).toBe(7_000);
    expect(delayFor(new Date(attemptedAt.getTime() - 60_000).toUTCString())).toBe(5_000);
    expect(parseRetryAfter(new Date(attemptedAt.getTime() + 7_000).toUTCString(), attemptedAt.getTime())).toBe(7_000);
    expect(parseRetryAfter(undefined, attemptedAt.getTime())).toBeNull();
  });
});

describe('the outbound client at connect time', () => {
  const post = (client: ReturnType<typeof createGuardedHttpClient>, url: string) =>
    postOnce(client, url, { headers: {}, body: '{}', timeoutMs: 2000, keepBodyBytes: 100 });

  it('refuse IPv4-compatible IPv6 (as Node writes [::127.0.0.1]), and private addresses behind a name, before connecting', async () => {
    const client = createGuardedHttpClient({ allowPrivateNetworks: false, connectTimeoutMs: 2000 });
    try {
      for (const url of ['http://[::127.0.0.1]:9/x', 'http://[::a9fe:a9fe]/x', 'http://127.0.0.1:9/x']) {
        await expect(post(client, url), url).rejects.toThrow(/is not a public address/);
      }
      await expect(post(client, 'http://localhost:9/x')).rejects.toThrow(
        /localhost resolves to .*, which is not a public address/,
      );
    } finally {
      await client.close();
    }
  });

  it('with private networks allowed, reach loopback but never a cloud metadata service', async () => {
    const server = createServer((_req, res) => res.end('fine'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const client = createGuardedHttpClient({ allowPrivateNetworks: true, connectTimeoutMs: 2000 });
    try {
      await expect(post(client, `http://localhost:${port}/x`)).resolves.toMatchObject({ status: 200, body: 'fine' });
      for (const url of [
        'http://169.254.169.254/latest/meta-data',
        'http://169.254.170.2/v2/credentials',
        'http://[fd00:ec2::254]/latest/meta-data',
        'http://[::ffff:169.254.169.254]/latest/meta-data',
        'http://100.100.100.200/latest/meta-data',
        'http://[fe80::1]/x',
      ]) {
        await expect(post(client, url), url).rejects.toThrow(/is a cloud metadata address, never called/);
      }
    } finally {
      await client.close();
      server.close();
    }
  });
});

describe('postOnce', () => {
  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

  /** A receiver on loopback, and a post to one of its paths (each with its deadline), for one test. */
  async function withReceiver(
    handler: RequestListener,
    test: (post: (path: string, timeoutMs: number) => Promise<OutboundResponse>) => Promise<void>,
    maxConnectionsPerOrigin?: number,
  ) {
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = createGuardedHttpClient({ allowPrivateNetworks: true, connectTimeoutMs: 2000, maxConnectionsPerOrigin });
    try {
      await test((path, timeoutMs) =>
        postOnce(client, `${base}${path}`, { headers: {}, body: '{}', timeoutMs, keepBodyBytes: 100 }),
      );
    } finally {
      await client.close();
      server.closeAllConnections();
      server.close();
    }
  }

  it('gives up at its deadline, before the answer or in the middle of its body; a call that ends leaves no timer', async () => {
    const handler: RequestListener = (req, res) => {
      if (req.url === '/stall-body') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('the start');
      } else if (req.url === '/ok') res.end('fine');
      // '/silent': never answers.
    };
    await withReceiver(handler, async (post) => {
      await expect(post('/silent', 300)).rejects.toThrow(/^timed out after 0.3 s$/);
      await expect(post('/stall-body', 300)).rejects.toThrow(/^timed out after 0.3 s$/);
      const before = timers();
      await expect(post('/ok', 300)).resolves.toMatchObject({ status: 200, body: 'fine' });
      expect(timers()).toBe(before);
    });
  });

  it('returns a redirect as it is, keeps the start of an answer, stops reading a huge one with its status, and says when one is cut off', async () => {
    const huge = 'x'.repeat(1024 * 1024);
    const handler: RequestListener = (req, res) => {
      if (req.url === '/moved')
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere', 'set-cookie': ['a=1', 'b=2'] }).end();
      else if (req.url === '/huge') res.writeHead(413).end(huge);
      else if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('half', () => res.destroy());
      }
    };
    await withReceiver(handler, async (post) => {
      await expect(post('/moved', 5000)).resolves.toMatchObject({
        status: 302,
        headers: { location: 'http://127.0.0.1:1/elsewhere', 'set-cookie': ['a=1', 'b=2'] },
        body: '',
      });
      await expect(post('/huge', 5000)).resolves.toEqual(expect.objectContaining({ status: 413, body: 'x'.repeat(100) }));
      await expect(post('/cut', 5000)).rejects.toThrow(/^the answer was cut off: /);
    });
  });

  it('refuses a URL it does not call and a header it cannot send, at once, leaving no timer', async () => {
    const client = createGuardedHttpClient({ allowPrivateNetworks: true, connectTimeoutMs: 2000 });
    const post = (url: string, headers: Record<string, string> = {}) =>
      postOnce(client, url, { headers, body: '{}', timeoutMs: 60_000, keepBodyBytes: 100 });
    try {
      const before = timers();
      await expect(post('ftp://127.0.0.1/x')).rejects.toThrow('ftp: URLs are not called');
      await expect(post('not a url')).rejects.toThrow(/Invalid URL/);
      await expect(post('http://127.0.0.1:9/x', { 'x-split': 'a\r\nx-injected: 1' })).rejects.toThrow(/header/i);
      expect(timers()).toBe(before);
    } finally {
      await client.close();
    }
  });

  it('never sends a call whose deadline passed while it waited for a connection', async () => {
    const paths: string[] = [];
    const handler: RequestListener = (req, res) => {
      paths.push(req.url!);
      // '/silent' never answers, and holds the only connection.
      if (req.url !== '/silent') res.end('fine');
    };
    await withReceiver(
      handler,
      async (post) => {
        const silent = post('/silent', 600);
        const queued = post('/queued', 200);
        await expect(queued).rejects.toThrow('timed out after 0.2 s');
        await expect(silent).rejects.toThrow('timed out after 0.6 s');
        // The connection is free again: a call queued after the timed-out one goes, and that one never went.
        await expect(post('/ok', 5000)).resolves.toMatchObject({ status: 200, body: 'fine' });
        expect(paths).toEqual(['/silent', '/ok']);
      },
      1,
    );
  });
});
