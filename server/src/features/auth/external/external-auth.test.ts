import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson, setCookies, startLoopbackServer } from '../../../../test/helpers/http.ts';
import { uniqueEmail } from '../../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';

let app: TestApp;
let jwks: Awaited<ReturnType<typeof startLoopbackServer>>;
let signingKey: CryptoKey;
let foreignKey: CryptoKey;
const ISSUER = 'https://auth.customer.example';

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  signingKey = pair.privateKey;
  foreignKey = (await generateKeyPair('RS256')).privateKey;
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'key-1', alg: 'RS256', use: 'sig' };
  jwks = await startLoopbackServer((_request, response) => sendJson(response, 200, { keys: [publicJwk] }));
  app = await startTestApp({
    EXTERNAL_JWT_JWKS_URL: `${jwks.url}/.well-known/jwks.json`,
    EXTERNAL_JWT_ISSUER: ISSUER,
    EXTERNAL_JWT_AUDIENCE: 'agent-platform',
    EXTERNAL_JWT_ADMIN_CLAIM: 'is_admin',
    AUTH_RATE_LIMIT_PER_MINUTE: '1000',
  });
});
afterAll(async () => {
  await app?.close();
  await jwks?.close();
});

async function token(
  claims: Record<string, unknown>,
  options: { key?: CryptoKey; issuer?: string; audience?: string; expiresIn?: string } = {},
) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'key-1' })
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? 'agent-platform')
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '5m')
    .sign(options.key ?? signingKey);
}

describe('POST /auth/external', () => {
  it("is offered by GET /auth/methods under the provider's name", async () => {
    const methods = await (await app.request('GET', '/auth/methods')).json();
    expect(methods).toEqual({ credentials: true, oauth: [], external: [expect.any(String)] });
  });

  it('creates the user from a valid token, stores the token encrypted and creates a session', async () => {
    const email = uniqueEmail('ext');
    const authToken = await token({ sub: 'ext-1', email, given_name: 'Grace', family_name: 'Hopper' });
    const response = await app.request('POST', '/auth/external', { body: { authToken, providerName: 'jwt' } });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.user).toMatchObject({
      email,
      externalUserId: 'ext-1',
      provider: 'jwt',
      firstName: 'Grace',
      lastName: 'Hopper',
      role: 'Guest',
    });
    expect(setCookies(response).get('session')!.value).toBe(body.sessionToken);
    expect((await app.request('GET', '/auth/me', { token: body.sessionToken })).status).toBe(200);

    const row = await app.container.db.selectFrom('users').selectAll().where('id', '=', body.user.id).executeTakeFirstOrThrow();
    expect(row.externalTokenEncrypted).toBeTruthy();
    expect(JSON.stringify(row)).not.toContain(authToken);
    expect(JSON.stringify(row)).not.toContain(authToken.split('.')[1]);
    expect(app.container.box.decrypt(row.externalTokenEncrypted!)).toBe(authToken);
  });

  it('finds the same user by externalUserId next time, with the provider as the default', async () => {
    const email = uniqueEmail('ext');
    const first = await (
      await app.request('POST', '/auth/external', { body: { authToken: await token({ sub: 'ext-2', email }) } })
    ).json();
    const second = await (
      await app.request('POST', '/auth/external', { body: { authToken: await token({ sub: 'ext-2', email, is_admin: true }) } })
    ).json();
    expect(second.user.id).toBe(first.user.id);
    expect(second.user.role).toBe('Admin');
    expect(second.sessionToken).not.toBe(first.sessionToken);
  });

  it('answers 401 for an invalid token: wrong key, wrong issuer, wrong audience, expired, garbage, missing claims', async () => {
    const email = uniqueEmail('ext');
    const bad = [
      await token({ sub: 'x', email }, { key: foreignKey }),
      await token({ sub: 'x', email }, { issuer: 'https://other.example' }),
      await token({ sub: 'x', email }, { audience: 'someone-else' }),
      await token({ sub: 'x', email }, { expiresIn: '-1m' }),
      await token({ email }),
      'not.a.jwt',
    ];
    for (const authToken of bad) {
      const response = await app.request('POST', '/auth/external', { body: { authToken } });
      expect(response.status).toBe(401);
      const body = await response.json();
      expect(body.code).toBe('invalid_external_token');
      expect(setCookies(response).get('session')).toBeUndefined();
    }
    expect(await app.container.services.users.findByEmail(email)).toBeUndefined();
  });

  it('answers 400 for an unknown provider and a malformed body', async () => {
    const unknown = await app.request('POST', '/auth/external', { body: { authToken: 'x', providerName: 'nope' } });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).code).toBe('unknown_auth_provider');
    expect((await app.request('POST', '/auth/external', { body: {} })).status).toBe(400);
    expect((await app.request('POST', '/auth/external', { body: { authToken: '' } })).status).toBe(400);
  });

  it('uses providers registered in code through the registry', async () => {
    app.container.externalAuthRegistry.registerExternalAuthProvider({
      name: 'static',
      validateToken: async (authToken) =>
        authToken === 'let-me-in'
          ? { isValid: true, userData: { externalUserId: 'static-1', email: 'static-user@example.com' } }
          : { isValid: false, error: 'unknown token' },
    });
    expect(app.container.externalAuthRegistry.getExternalAuthProvider('static')?.name).toBe('static');
    const ok = await app.request('POST', '/auth/external', { body: { authToken: 'let-me-in', providerName: 'static' } });
    expect(ok.status).toBe(200);
    const denied = await app.request('POST', '/auth/external', { body: { authToken: 'nope', providerName: 'static' } });
    expect(denied.status).toBe(401);
    expect((await denied.json()).error).toContain('unknown token');
  });
});
