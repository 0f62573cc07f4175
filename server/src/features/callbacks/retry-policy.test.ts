import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createGuardedHttpAgents, isPublicAddress, postOnce } from '../../lib/http-client.ts';
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

describe('public addresses', () => {
  it.each([
    ['93.184.215.14', true],
    ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', true],
    ['127.0.0.1', false],
    ['10.0.0.1', false],
    ['172.16.5.4', false],
    ['192.168.0.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd00:ec2::254', false],
    ['fec0::1', false],
    ['feff:ffff::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    // IPv6 that carries an IPv4 address: compatible (as Node's URL writes [::127.0.0.1]), mapped, NAT64, 6to4, Teredo.
    ['::7f00:1', false],
    ['::a9fe:a9fe', false],
    ['::a00:1', false],
    ['::808:808', false],
    ['::ffff:a9fe:a9fe', false],
    ['64:ff9b::a00:1', false],
    ['64:ff9b:1::a00:1', false],
    ['2002:a00:1::', false],
    ['2002:7f00:1::1', false],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', false],
    ['not an address', false],
  ])('%s public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('the outbound agents at connect time', () => {
  it('refuse IPv4-compatible IPv6 (as Node writes [::127.0.0.1]) before connecting', async () => {
    const agents = createGuardedHttpAgents({ allowPrivateNetworks: false });
    try {
      for (const url of ['http://[::127.0.0.1]:9/x', 'http://[::a9fe:a9fe]/x']) {
        await expect(
          postOnce(agents, url, { headers: {}, body: '{}', timeoutMs: 2000, keepBodyBytes: 100 }),
          url,
        ).rejects.toThrow(/is not allowed/);
      }
    } finally {
      agents.destroy();
    }
  });
});

describe('postOnce', () => {
  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

  it('gives up at its deadline, before the answer or in the middle of its body; a call that ends leaves no timer', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/stall-body') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('the start');
      } else if (req.url === '/ok') res.end('fine');
      // '/silent': never answers.
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const agents = createGuardedHttpAgents({ allowPrivateNetworks: true });
    const post = (path: string) =>
      postOnce(agents, `${base}${path}`, { headers: {}, body: '{}', timeoutMs: 300, keepBodyBytes: 100 });
    try {
      await expect(post('/silent')).rejects.toThrow('timed out after 0.3 s');
      await expect(post('/stall-body')).rejects.toThrow('timed out after 0.3 s');
      const before = timers();
      await expect(post('/ok')).resolves.toMatchObject({ status: 200, body: 'fine' });
      expect(timers()).toBe(before);
    } finally {
      agents.destroy();
      server.closeAllConnections();
      server.close();
    }
  });
});
