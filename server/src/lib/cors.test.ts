import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, signIn } from '../../test/helpers/factories.ts';
import { TEST_APP_HOST, startTestApp, type TestApp, type TestResponse } from '../../test/helpers/test-app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

const corsHeadersOf = (response: TestResponse) =>
  Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

const preflight = (origin: string, method: string, headers?: string) =>
  app.request('OPTIONS', '/auth/me/preferences', {
    headers: {
      origin,
      'access-control-request-method': method,
      ...(headers && { 'access-control-request-headers': headers }),
    },
  });

describe('CORS', () => {
  it('lets a console on APP_HOST read answers with its cookie, and says the answer varies by Origin', async () => {
    const response = await app.request('GET', '/auth/methods', { headers: { origin: TEST_APP_HOST } });
    expect(response.status).toBe(200);
    expect(corsHeadersOf(response)).toEqual({
      'access-control-allow-origin': TEST_APP_HOST,
      'access-control-allow-credentials': 'true',
      vary: 'Origin',
    });
  });

  it('answers a preflight from APP_HOST for every method the API takes, with the headers it asked for, cached 10 minutes', async () => {
    for (const method of ['PATCH', 'PUT', 'DELETE', 'POST']) {
      const response = await preflight(TEST_APP_HOST, method, 'content-type');
      expect({ status: response.status, body: await response.text() }).toEqual({ status: 204, body: '' });
      expect(corsHeadersOf(response)).toEqual({
        'access-control-allow-origin': TEST_APP_HOST,
        'access-control-allow-credentials': 'true',
        'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
        'access-control-allow-headers': 'content-type',
        'access-control-max-age': '600',
        vary: 'Origin, Access-Control-Request-Headers',
      });
    }
  });

  it("gives the cross-origin console's PATCH its answer, cookie-authenticated", async () => {
    const token = await signIn(app, await createUser(app));
    const response = await app.request('PATCH', '/auth/me/preferences', {
      cookie: token,
      headers: { origin: TEST_APP_HOST },
      body: { approvalEmails: false },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ approvalEmails: false });
    expect(response.headers.get('access-control-allow-origin')).toBe(TEST_APP_HOST);
  });

  it('gives another origin no CORS header, on a preflight or a request, so its browser keeps the answer from it', async () => {
    const evil = 'https://evil.example';
    const asked = await preflight(evil, 'PATCH', 'content-type');
    expect(asked.status).toBe(204);
    expect(corsHeadersOf(asked)).toEqual({ vary: 'Origin, Access-Control-Request-Headers' });
    const read = await app.request('GET', '/auth/methods', { headers: { origin: evil } });
    expect(corsHeadersOf(read)).toEqual({ vary: 'Origin' });
    // Nor a trusted origin's look-alike.
    const lookAlike = await app.request('GET', '/auth/methods', { headers: { origin: `${TEST_APP_HOST}.evil.example` } });
    expect(corsHeadersOf(lookAlike)).toEqual({ vary: 'Origin' });
  });

  it('adds nothing to a request without an Origin (a server, the CLI), and answers its OPTIONS 204', async () => {
    const read = await app.request('GET', '/auth/methods');
    expect(corsHeadersOf(read)).toEqual({});
    const options = await app.request('OPTIONS', '/auth/methods');
    expect({ status: options.status, body: await options.text(), cors: corsHeadersOf(options) }).toEqual({
      status: 204,
      body: '',
      cors: {},
    });
  });
});
