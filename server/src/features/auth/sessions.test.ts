import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../lib/crypto.ts';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { TEST_APP_HOST, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { SESSION_LIFETIME_SECONDS } from './sessions.service.ts';
import { eventually } from '../../../test/helpers/eventually.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const NO_SESSION = { error: 'Unauthorized: No session found', code: 'session_missing' };
const INVALID_SESSION = { error: 'Unauthorized: Invalid session', code: 'session_invalid' };
const ADMIN_REQUIRED = { error: 'Forbidden: Requires Admin role', code: 'admin_required' };

describe('flexibleSessionMiddleware', () => {
  it('answers 401 with the exact body when no token is sent', async () => {
    const response = await app.request('GET', '/auth/me');
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual(NO_SESSION);
  });

  it('answers 401 with the exact body for a token that does not validate', async () => {
    const ways: Array<Parameters<TestApp['request']>[2]> = [
      { token: 'not-a-session' },
      { cookie: 'not-a-session' },
      { headers: { session: 'not-a-session' } },
    ];
    for (const options of ways) {
      const response = await app.request('GET', '/auth/me', options);
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual(INVALID_SESSION);
    }
  });

  it('accepts the token as Bearer, as the session header and as the cookie', async () => {
    const user = await createUser(app);
    const token = await signIn(app, user);
    const ways: Array<Parameters<TestApp['request']>[2]> = [
      { token },
      { headers: { authorization: token } },
      { headers: { session: token } },
      { cookie: token },
    ];
    for (const options of ways) {
      const response = await app.request('GET', '/auth/me', options);
      expect(response.status).toBe(200);
      expect((await response.json()).id).toBe(user.id);
    }
  });

  it('takes the header over the cookie, and Authorization over the session header', async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const [aliceToken, bobToken] = [await signIn(app, alice), await signIn(app, bob)];
    const headerWins = await app.request('GET', '/auth/me', { token: aliceToken, cookie: bobToken });
    expect((await headerWins.json()).id).toBe(alice.id);
    const authorizationWins = await app.request('GET', '/auth/me', { token: bobToken, headers: { session: aliceToken } });
    expect((await authorizationWins.json()).id).toBe(bob.id);
    // A bad header is not rescued by a good cookie: the header decides.
    const badHeader = await app.request('GET', '/auth/me', { token: 'bad', cookie: aliceToken });
    expect(badHeader.status).toBe(401);
  });

  it('defaults to the Admin role: a Guest gets the exact 403 body', async () => {
    const { org } = await createTenant(app);
    const guest = await createUser(app, { role: 'Guest', org: org.slug });
    const response = await app.request('GET', `/orgs/${org.slug}/members`, { token: await signIn(app, guest) });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual(ADMIN_REQUIRED);
  });
});

describe('session lifetime and storage', () => {
  it('stores only the SHA-256 of the token', async () => {
    const user = await createUser(app);
    const token = await signIn(app, user);
    const rows = await app.container.db.selectFrom('sessions').selectAll().where('userId', '=', user.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.tokenHash).toBe(sha256Hex(token));
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
  });

  it('expires after 30 days', async () => {
    const user = await createUser(app);
    const token = await signIn(app, user);
    try {
      app.clock.advance(SESSION_LIFETIME_SECONDS * 1000 - 60_000);
      expect((await app.request('GET', '/auth/me', { token })).status).toBe(200);
      app.clock.advance(120_000);
      const expired = await app.request('GET', '/auth/me', { token });
      expect(expired.status).toBe(401);
      expect(await expired.json()).toEqual(INVALID_SESSION);
    } finally {
      app.clock.reset();
    }
  });
});

describe('logout', () => {
  it('invalidates the session and clears the cookie with maxAge 0', async () => {
    const user = await createUser(app);
    const token = await signIn(app, user);
    const response = await app.request('POST', '/auth/logout', { cookie: token, headers: { origin: TEST_APP_HOST } });
    expect(response.status).toBe(200);
    const cleared = response.headers.getSetCookie().find((cookie) => cookie.startsWith('session='));
    expect(cleared).toMatch(/^session=;/);
    expect(cleared).toContain('Max-Age=0');
    expect((await app.request('GET', '/auth/me', { cookie: token })).status).toBe(401);
  });

  it('works with a Bearer token and needs a session', async () => {
    const token = await signIn(app, await createUser(app));
    expect((await app.request('POST', '/auth/logout', { token })).status).toBe(200);
    expect((await app.request('GET', '/auth/me', { token })).status).toBe(401);
    const none = await app.request('POST', '/auth/logout');
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual(NO_SESSION);
  });
});

describe('CSRF on cookie-authenticated unsafe requests', () => {
  it('refuses a cookie-authenticated POST from a foreign origin and keeps the session', async () => {
    const token = await signIn(app, await createUser(app));
    const response = await app.request('POST', '/auth/logout', { cookie: token, headers: { origin: 'https://evil.example' } });
    expect(response.status).toBe(403);
    expect((await response.json()).code).toBe('csrf_rejected');
    const crossSite = await app.request('POST', '/auth/logout', { cookie: token, headers: { 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    // A foreign origin the browser calls same-site (another subdomain, another port) is still foreign.
    const sameSite = await app.request('POST', '/auth/logout', {
      cookie: token,
      headers: { origin: 'http://other.app.test', 'sec-fetch-site': 'same-site' },
    });
    expect(sameSite.status).toBe(403);
    expect((await app.request('GET', '/auth/me', { cookie: token })).status).toBe(200);
  });

  it("lets a page of the server's own origin through at an address that is not APP_HOST (the browser attests it)", async () => {
    const token = await signIn(app, await createUser(app));
    const headers = { origin: 'http://localhost:3000', 'sec-fetch-site': 'same-origin' };
    const response = await app.request('POST', '/auth/logout', { cookie: token, headers });
    expect(response.status).toBe(200);
    expect((await app.request('GET', '/auth/me', { cookie: token })).status).toBe(401);
  });

  it('lets the same request through with a header token, whatever its origin', async () => {
    const token = await signIn(app, await createUser(app));
    const response = await app.request('POST', '/auth/logout', { token, headers: { origin: 'https://evil.example' } });
    expect(response.status).toBe(200);
  });
});

describe('session cache across processes', () => {
  // Two containers on one PostgreSQL database stand for two server processes.
  it.runIf(process.env.TEST_DB === 'postgres')(
    "drops a session revoked in another process from this process's cache",
    async () => {
      const { createContainer } = await import('../../container.ts');
      const { openDatabase } = await import('../../db/database.ts');
      const other = await createContainer(app.container.config, {
        database: await openDatabase({ url: app.container.database.url }),
      });
      try {
        const user = await createUser(app);
        const token = await signIn(app, user);
        expect(await app.container.services.sessions.validate(token)).toBeDefined(); // now cached here
        await other.services.sessions.revoke(token);
        await eventually(
          'the revocation, in the other process',
          async () => ((await app.container.services.sessions.validate(token)) === undefined ? true : undefined),
          5_000,
        );
      } finally {
        await other.bus.close();
        await other.database.close();
      }
    },
  );

  it('forgets a revoked session at once in the revoking process', async () => {
    const token = await signIn(app, await createUser(app));
    expect((await app.request('GET', '/auth/me', { token })).status).toBe(200);
    await app.container.services.sessions.revoke(token);
    expect((await app.request('GET', '/auth/me', { token })).status).toBe(401);
  });
});

describe('purging expired sessions', () => {
  it('is scheduled hourly and deletes expired sessions only', async () => {
    const { rows } = await sql<{
      name: string;
      cron: string;
    }>`select name, cron from pgboss.schedule where name = 'auth.purge-expired'`.execute(app.container.db);
    expect(rows[0]?.cron).toBe('17 * * * *');

    const stale = await createUser(app);
    await signIn(app, stale);
    app.clock.advance(SESSION_LIFETIME_SECONDS * 1000 + 1000);
    try {
      const fresh = await createUser(app);
      await signIn(app, fresh);
      await app.container.jobs.enqueue('auth.purge-expired', {});
      const count = async (userId: string) =>
        (await app.container.db.selectFrom('sessions').select('id').where('userId', '=', userId).execute()).length;
      await eventually('the expired session purged', async () => ((await count(stale.id)) === 0 ? true : undefined), 10_000);
      expect(await count(fresh.id)).toBe(1);
    } finally {
      app.clock.reset();
    }
  });
});
