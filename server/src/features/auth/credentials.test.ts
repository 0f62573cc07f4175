import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PASSWORD, createUser, uniqueEmail } from '../../../test/helpers/factories.ts';
import { setCookies } from '../../../test/helpers/http.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

async function login(email: string, password: string) {
  return app.request('POST', '/auth/login/credentials', { body: { email, password } });
}

describe('POST /auth/login/credentials', () => {
  it('returns the user object and sets the session cookie: HttpOnly, Secure, SameSite=Lax, Path=/, Max-Age of the session', async () => {
    const user = await createUser(app);
    const response = await login(user.email, DEFAULT_PASSWORD);
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toEqual({
      id: user.id,
      email: user.email,
      username: user.username,
      firstName: 'Test',
      lastName: 'User',
      codehostId: null,
      idpId: null,
      role: 'Guest',
      provider: 'credentials',
      externalUserId: null,
    });
    expect(JSON.stringify(body)).not.toMatch(/password|\$2b\$/i);
    const cookie = setCookies(response).get('session')!;
    expect(cookie.value.length).toBeGreaterThanOrEqual(22);
    expect(cookie.attributes).toContain('Max-Age=2592000');
    expect(cookie.attributes).toContain('HttpOnly');
    expect(cookie.attributes).toContain('Secure');
    expect(cookie.attributes).toContain('SameSite=Lax');
    expect(cookie.attributes).toContain('Path=/');
    const me = await app.request('GET', '/auth/me', { cookie: cookie.value });
    expect((await me.json()).id).toBe(user.id);
  });

  it('is case-insensitive on the email', async () => {
    const user = await createUser(app, { email: uniqueEmail('MixedCase') });
    expect((await login(user.email.toUpperCase(), DEFAULT_PASSWORD)).status).toBe(200);
  });

  it('creates a new session on every login', async () => {
    const user = await createUser(app);
    const first = setCookies(await login(user.email, DEFAULT_PASSWORD)).get('session')!.value;
    const second = setCookies(await login(user.email, DEFAULT_PASSWORD)).get('session')!.value;
    expect(first).not.toBe(second);
    for (const token of [first, second]) expect((await app.request('GET', '/auth/me', { token })).status).toBe(200);
  });

  it('gives one generic answer for a wrong password and an unknown email, and sets no cookie', async () => {
    const user = await createUser(app);
    const wrong = await login(user.email, 'not the password');
    const unknown = await login(uniqueEmail('nobody'), DEFAULT_PASSWORD);
    for (const response of [wrong, unknown]) {
      expect(response.status).toBe(401);
      expect(response.headers.getSetCookie()).toEqual([]);
    }
    expect(await wrong.json()).toEqual(await unknown.json());
  });

  it('validates the body with a schema: 400 with a code and a message', async () => {
    for (const body of [
      {},
      { email: 'not-an-email', password: 'x' },
      { email: 'a@example.com' },
      { email: 'a@example.com', password: 42 },
    ]) {
      const response = await app.request('POST', '/auth/login/credentials', { body });
      expect(response.status).toBe(400);
      const error = await response.json();
      expect(error.code).toBe('validation_failed');
      expect(error.error).toMatch(/body/);
    }
    const malformed = await app.request('POST', '/auth/login/credentials', { body: '{"email":' });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).code).toBe('invalid_json');
  });

  it('stores the password as a bcrypt hash of the configured cost (PASSWORD_HASH_COST, 12 unless set)', async () => {
    const email = uniqueEmail();
    await app.container.services.users.create({ email, password: 'a fine password', role: 'Guest', provider: 'credentials' });
    const row = await app.container.db
      .selectFrom('users')
      .select('passwordHash')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    // The tests run at cost 4 (test-app.ts); config.test.ts proves that 12 is the default.
    expect(row.passwordHash).toMatch(/^\$2[ab]\$04\$/);
    expect((await login(email, 'a fine password')).status).toBe(200);
  });
});

describe('production cookies', () => {
  it('uses sameSite none when NODE_ENV is production', async () => {
    const production = await startTestApp({ NODE_ENV: 'production' });
    try {
      const user = await createUser(production);
      const response = await production.request('POST', '/auth/login/credentials', {
        body: { email: user.email, password: DEFAULT_PASSWORD },
      });
      const cookie = setCookies(response).get('session')!;
      expect(cookie.attributes).toContain('SameSite=None');
      expect(cookie.attributes).toContain('Secure');
    } finally {
      await production.close();
    }
  });
});

describe('auth rate limit (10 per 60 s)', () => {
  it('answers the 11th login in a minute from one address with 429 and Retry-After', async () => {
    const user = await createUser(app);
    const limited = await startTestApp({ TRUST_PROXY: 'true' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) {
        const response = await limited.request('POST', '/auth/login/credentials', {
          body: { email: user.email, password: 'wrong password' },
          headers: { 'x-forwarded-for': '10.1.0.1' },
        });
        statuses.push(response.status);
        if (i === 10) {
          expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(Number(response.headers.get('retry-after'))).toBeLessThanOrEqual(60);
          expect((await response.json()).code).toBe('rate_limited');
        }
      }
      expect(statuses.slice(0, 10).every((status) => status === 401)).toBe(true);
      expect(statuses[10]).toBe(429);
      // Another client address still has its own budget.
      const other = await limited.request('POST', '/auth/login/credentials', {
        body: { email: user.email, password: 'wrong password' },
        headers: { 'x-forwarded-for': '10.9.9.9' },
      });
      expect(other.status).toBe(401);
    } finally {
      await limited.close();
    }
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY says so', async () => {
    const limited = await startTestApp();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) {
        const response = await limited.request('POST', '/auth/login/credentials', {
          body: { email: uniqueEmail(), password: 'x' },
          headers: { 'x-forwarded-for': `10.2.0.${i}` },
        });
        statuses.push(response.status);
      }
      expect(statuses[10]).toBe(429);
    } finally {
      await limited.close();
    }
  });
});
