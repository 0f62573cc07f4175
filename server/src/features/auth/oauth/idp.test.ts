import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, uniqueEmail } from '../../../../test/helpers/factories.ts';
import { setCookies } from '../../../../test/helpers/http.ts';
import { runOAuthLogin } from '../../../../test/helpers/oauth-flow.ts';
import { TEST_APP_HOST, startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';

let app: TestApp;
let idp: OAuth2Server;
let person = { sub: 'person-0', email: 'nobody@example.com', email_verified: true, given_name: 'Ada', family_name: 'Lovelace' };

beforeAll(async () => {
  idp = new OAuth2Server();
  await idp.issuer.keys.generate('RS256');
  await idp.start(0, '127.0.0.1');
  idp.service.on('beforeTokenSigning', (token) => {
    token.payload.sub = person.sub;
  });
  idp.service.on('beforeUserinfo', (userinfo) => {
    userinfo.body = { ...person };
  });
  app = await startTestApp({
    IDP_CLIENT_ID: 'idp-client',
    IDP_CLIENT_SECRET: 'idp-secret',
    IDP_ISSUER: idp.issuer.url!,
    AUTH_RATE_LIMIT_PER_MINUTE: '1000',
  });
});
afterAll(async () => {
  await app?.close();
  await idp?.stop();
});

let counter = 0;
const newPerson = (email = uniqueEmail('ada'), verified = true) => {
  person = { sub: `person-${++counter}`, email, email_verified: verified, given_name: 'Ada', family_name: 'Lovelace' };
  return person;
};

describe('GET /auth/idp', () => {
  it('redirects to the discovered authorization endpoint with state, nonce and an S256 PKCE challenge kept in HTTP-only cookies', async () => {
    const response = await app.request('GET', '/auth/idp');
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.href.startsWith(`${idp.issuer.url}/authorize`)).toBe(true);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('scope')).toBe('openid email profile');
    const cookies = setCookies(response);
    expect(cookies.get('oauth_idp_state')!.value).toBe(location.searchParams.get('state'));
    expect(cookies.get('oauth_idp_nonce')!.value).toBe(location.searchParams.get('nonce'));
    expect(cookies.get('oauth_idp_verifier')!.value).not.toBe(location.searchParams.get('code_challenge'));
    for (const cookie of cookies.values()) expect(cookie.attributes).toMatch(/HttpOnly/);
  });
});

describe('GET /auth/idp/callback', () => {
  it('exchanges the code with the verifier, reads userinfo, creates the user and a session', async () => {
    const who = newPerson();
    const { callback } = await runOAuthLogin(app, 'idp');
    expect(callback!.status).toBe(302);
    expect(callback!.headers.get('location')).toBe(TEST_APP_HOST);
    const me = await app.request('GET', '/auth/me', { cookie: setCookies(callback!).get('session')!.value });
    expect(await me.json()).toMatchObject({
      email: who.email,
      idpId: who.sub,
      provider: 'idp',
      firstName: 'Ada',
      lastName: 'Lovelace',
      role: 'Guest',
    });
  });

  it('refuses a wrong state and a missing cookie with 400 and no session', async () => {
    for (const tamper of [{ state: 'forged' }, { dropCookies: true }]) {
      const who = newPerson();
      const { callback } = await runOAuthLogin(app, 'idp', tamper);
      expect(callback!.status).toBe(400);
      expect(setCookies(callback!).get('session')).toBeUndefined();
      expect(await app.container.services.users.findByEmail(who.email)).toBeUndefined();
    }
  });

  it('links an existing account only for a verified email', async () => {
    const existing = await createUser(app);
    newPerson(existing.email, false);
    const unverified = await runOAuthLogin(app, 'idp');
    expect(unverified.callback!.status).toBe(409);
    newPerson(existing.email, true);
    const verified = await runOAuthLogin(app, 'idp');
    const me = await app.request('GET', '/auth/me', { cookie: setCookies(verified.callback!).get('session')!.value });
    expect((await me.json()).id).toBe(existing.id);
  });
});
