import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, signIn } from '../../../test/helpers/factories.ts';
import { TEST_APP_HOST, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

/**
 * The three session middlewares on routes of their own: sessionMiddleware (cookie only,
 * default Guest) and optionalSessionMiddleware have no product route yet.
 */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(
    {},
    {
      routes: (server, container) => {
        const { sessionMiddleware, optionalSessionMiddleware, flexibleSessionMiddleware } = container.middlewares;
        const whoami = async (request: { user: { id: string } | null; session: { id: string } | null }) => ({
          userId: request.user?.id ?? null,
          sessionId: request.session?.id ?? null,
        });
        server.get('/test/cookie-guest', { preHandler: sessionMiddleware() }, whoami);
        server.post('/test/cookie-guest', { preHandler: sessionMiddleware() }, whoami);
        server.get('/test/cookie-admin', { preHandler: sessionMiddleware('Admin') }, whoami);
        server.get('/test/optional', { preHandler: optionalSessionMiddleware }, whoami);
        server.get('/test/flexible-default', { preHandler: flexibleSessionMiddleware() }, whoami);
      },
    },
  );
});
afterAll(async () => app?.close());

describe('sessionMiddleware(routeRole = Guest)', () => {
  it('reads only the session cookie: a Bearer token alone is "no session"', async () => {
    const user = await createUser(app);
    const token = await signIn(app, user);
    const byCookie = await app.request('GET', '/test/cookie-guest', { cookie: token });
    expect(byCookie.status).toBe(200);
    expect((await byCookie.json()).userId).toBe(user.id);
    const byBearer = await app.request('GET', '/test/cookie-guest', { token });
    expect(byBearer.status).toBe(401);
    expect(await byBearer.json()).toEqual({ error: 'Unauthorized: No session found', code: 'session_missing' });
  });

  it('answers the exact 401 and 403 bodies', async () => {
    const guest = await createUser(app, { role: 'Guest' });
    const invalid = await app.request('GET', '/test/cookie-guest', { cookie: 'nope' });
    expect(invalid.status).toBe(401);
    expect(await invalid.json()).toEqual({ error: 'Unauthorized: Invalid session', code: 'session_invalid' });
    const forbidden = await app.request('GET', '/test/cookie-admin', { cookie: await signIn(app, guest) });
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toEqual({ error: 'Forbidden: Requires Admin role', code: 'admin_required' });
    const admin = await createUser(app, { role: 'Admin' });
    expect((await app.request('GET', '/test/cookie-admin', { cookie: await signIn(app, admin) })).status).toBe(200);
  });

  it('checks the origin of unsafe cookie requests (CSRF)', async () => {
    const token = await signIn(app, await createUser(app));
    expect((await app.request('POST', '/test/cookie-guest', { cookie: token, headers: { origin: TEST_APP_HOST } })).status).toBe(
      200,
    );
    expect(
      (await app.request('POST', '/test/cookie-guest', { cookie: token, headers: { 'sec-fetch-site': 'same-origin' } })).status,
    ).toBe(200);
    expect(
      (await app.request('POST', '/test/cookie-guest', { cookie: token, headers: { origin: 'https://evil.example' } })).status,
    ).toBe(403);
  });
});

describe('optionalSessionMiddleware', () => {
  it('attaches user and session from a valid cookie', async () => {
    const user = await createUser(app);
    const response = await app.request('GET', '/test/optional', { cookie: await signIn(app, user) });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.userId).toBe(user.id);
    expect(body.sessionId).toBeTruthy();
  });

  it('never fails the request: no cookie, a bad cookie, or only a header', async () => {
    const token = await signIn(app, await createUser(app));
    for (const options of [{}, { cookie: 'garbage' }, { token }]) {
      const response = await app.request('GET', '/test/optional', options);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ userId: null, sessionId: null });
    }
  });
});

describe('flexibleSessionMiddleware() default role', () => {
  it('is Admin', async () => {
    const guest = await createUser(app, { role: 'Guest' });
    const response = await app.request('GET', '/test/flexible-default', { token: await signIn(app, guest) });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: 'Forbidden: Requires Admin role', code: 'admin_required' });
  });
});
