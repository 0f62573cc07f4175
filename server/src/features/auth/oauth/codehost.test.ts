import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, uniqueEmail } from '../../../../test/helpers/factories.ts';
import { startFakeCodehost } from '../../../../test/helpers/fake-codehost.ts';
import { setCookies } from '../../../../test/helpers/http.ts';
import { runOAuthLogin } from '../../../../test/helpers/oauth-flow.ts';
import { TEST_APP_HOST, startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';

let app: TestApp;
let codehost: Awaited<ReturnType<typeof startFakeCodehost>>;
let nextId = 1000;
beforeAll(async () => {
  codehost = await startFakeCodehost({ clientId: 'codehost-client', clientSecret: 'codehost-secret' });
  app = await startTestApp({ ...codehost.env, AUTH_RATE_LIMIT_PER_MINUTE: '1000' });
});
afterAll(async () => {
  await app?.close();
  await codehost?.close();
});

const account = (email: string, verified = true) => ({
  id: ++nextId,
  login: `octo${nextId}`,
  name: 'Octo Cat',
  email: null,
  emails: [{ email, primary: true, verified }],
});

async function sessionCount(userId: string) {
  return (await app.container.db.selectFrom('sessions').select('id').where('userId', '=', userId).execute()).length;
}

describe('GET /auth/codehost', () => {
  it('redirects to the provider with client id, redirect URI, state and PKCE; the state is in an HTTP-only cookie', async () => {
    const response = await app.request('GET', '/auth/codehost');
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(`${codehost.url}/login/oauth/authorize`);
    expect(location.searchParams.get('client_id')).toBe('codehost-client');
    expect(location.searchParams.get('redirect_uri')).toBe(`${app.baseUrl}/auth/codehost/callback`);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    const state = location.searchParams.get('state')!;
    expect(state.length).toBeGreaterThanOrEqual(22);
    const cookie = setCookies(response).get('oauth_codehost_state')!;
    expect(cookie.value).toBe(state);
    expect(cookie.attributes).toMatch(/HttpOnly/);
    expect(cookie.attributes).toMatch(/Secure/);
  });
});

describe('GET /auth/codehost/callback', () => {
  it('creates the user, creates a session and redirects to APP_HOST', async () => {
    const email = uniqueEmail('octo');
    codehost.setAccount(account(email));
    const { callback } = await runOAuthLogin(app, 'codehost');
    expect(callback!.status).toBe(302);
    expect(callback!.headers.get('location')).toBe(TEST_APP_HOST);
    const session = setCookies(callback!).get('session')!;
    const me = await app.request('GET', '/auth/me', { cookie: session.value });
    const user = await me.json();
    expect(user).toMatchObject({
      email,
      codehostId: String(nextId),
      provider: 'codehost',
      role: 'Guest',
      username: `octo${nextId}`,
      firstName: 'Octo',
      lastName: 'Cat',
    });
  });

  it('signs the same provider account into the same user next time', async () => {
    const email = uniqueEmail('octo');
    codehost.setAccount(account(email));
    const first = await runOAuthLogin(app, 'codehost');
    const second = await runOAuthLogin(app, 'codehost');
    const ids = await Promise.all(
      [first, second].map(async ({ callback }) => {
        const me = await app.request('GET', '/auth/me', { cookie: setCookies(callback!).get('session')!.value });
        return (await me.json()).id;
      }),
    );
    expect(ids[0]).toBe(ids[1]);
  });

  it('links to an existing account only when the provider says the email is verified', async () => {
    const existing = await createUser(app);
    codehost.setAccount(account(existing.email, false));
    const unverified = await runOAuthLogin(app, 'codehost');
    expect(unverified.callback!.status).toBe(409);
    expect(setCookies(unverified.callback!).get('session')).toBeUndefined();
    expect(await sessionCount(existing.id)).toBe(0);

    codehost.setAccount(account(existing.email, true));
    const verified = await runOAuthLogin(app, 'codehost');
    expect(verified.callback!.status).toBe(302);
    const me = await app.request('GET', '/auth/me', { cookie: setCookies(verified.callback!).get('session')!.value });
    expect((await me.json()).id).toBe(existing.id);
  });

  it('refuses a wrong state with 400 and creates no session', async () => {
    const email = uniqueEmail('octo');
    codehost.setAccount(account(email));
    const { callback } = await runOAuthLogin(app, 'codehost', { state: 'forged-state' });
    expect(callback!.status).toBe(400);
    expect((await callback!.json()).code).toBe('oauth_state_mismatch');
    expect(setCookies(callback!).get('session')).toBeUndefined();
    expect(await app.container.services.users.findByEmail(email)).toBeUndefined();
  });

  it('refuses a missing state cookie with 400 and creates no session', async () => {
    const email = uniqueEmail('octo');
    codehost.setAccount(account(email));
    const { callback } = await runOAuthLogin(app, 'codehost', { dropCookies: true });
    expect(callback!.status).toBe(400);
    expect(setCookies(callback!).get('session')).toBeUndefined();
    expect(await app.container.services.users.findByEmail(email)).toBeUndefined();
  });

  it('refuses a callback without a code, or with a code the provider rejects', async () => {
    const start = await app.request('GET', '/auth/codehost');
    const cookies = [...setCookies(start)].map(([name, c]) => `${name}=${c.value}`).join('; ');
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const badCode = await app.request('GET', `/auth/codehost/callback?code=made-up&state=${state}`, {
      headers: { cookie: cookies },
    });
    expect(badCode.status).toBe(400);
    expect((await badCode.json()).code).toBe('oauth_exchange_failed');
    const denied = await app.request('GET', `/auth/codehost/callback?error=access_denied&state=${state}`, {
      headers: { cookie: cookies },
    });
    expect(denied.status).toBe(400);
  });
});

describe('an unconfigured provider', () => {
  it('is not offered, and answers 404 with a clear message', async () => {
    expect(await (await app.request('GET', '/auth/methods')).json()).toEqual({
      credentials: true,
      oauth: ['codehost'],
      external: [],
    });
    const bare = await startTestApp();
    try {
      expect(await (await bare.request('GET', '/auth/methods')).json()).toEqual({ credentials: true, oauth: [], external: [] });
      for (const path of ['/auth/codehost', '/auth/codehost/callback?code=x&state=y', '/auth/idp', '/auth/idp/callback']) {
        const response = await bare.request('GET', path);
        expect(response.status).toBe(404);
        const body = await response.json();
        expect(body.code).toBe('provider_not_configured');
        expect(body.error).toMatch(/not configured/);
      }
    } finally {
      await bare.close();
    }
  });
});

describe('OAuth rate limit (10 per minute per IP)', () => {
  it('answers the 11th request in a minute with 429', async () => {
    const limited = await startTestApp(codehost.env);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await limited.request('GET', '/auth/codehost')).status);
      expect(statuses.slice(0, 10).every((status) => status === 302)).toBe(true);
      expect(statuses[10]).toBe(429);
    } finally {
      await limited.close();
    }
  });
});
