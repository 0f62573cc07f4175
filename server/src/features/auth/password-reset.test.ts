import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../lib/crypto.ts';
import { DEFAULT_PASSWORD, createUser, signIn, uniqueEmail } from '../../../test/helpers/factories.ts';
import { startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { POLL_FOR_DUE_WORK, TEST_APP_HOST, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { RESET_TOKEN_LIFETIME_MS } from './password-reset.service.ts';
import { eventually } from '../../../test/helpers/eventually.ts';

let app: TestApp;
let mail: Awaited<ReturnType<typeof startFakeMailProvider>>;
beforeAll(async () => {
  mail = await startFakeMailProvider();
  // The poll: a failed mail's retry.
  app = await startTestApp({ MAIL_API_KEY: mail.apiKey, MAIL_API_URL: mail.url, TRUST_PROXY: 'true', ...POLL_FOR_DUE_WORK });
});
afterAll(async () => {
  await app?.close();
  await mail?.close();
});

let ipCounter = 0;
/** Spreads requests over client addresses so the per-IP throttle of one test spares the others. */
const request = (method: string, path: string, body: unknown) =>
  app.request(method, path, { body, headers: { 'x-forwarded-for': `10.3.0.${++ipCounter}` } });

async function requestResetToken(email: string): Promise<string> {
  const before = mail.sent.filter((sent) => sent.to.includes(email)).length;
  expect((await request('POST', '/auth/forgot-password', { email })).status).toBe(200);
  // A failed send is retried by the queue with backoff.
  await eventually(
    'the reset email',
    () => (mail.sent.filter((sent) => sent.to.includes(email)).length > before ? true : undefined),
    20_000,
  );
  const email_ = mail.sent.filter((sent) => sent.to.includes(email)).at(-1)!;
  const link = /(http\S+reset-password\?token=\S+)/.exec(email_.text ?? '')![1]!;
  expect(link.startsWith(`${TEST_APP_HOST}/reset-password?token=`)).toBe(true);
  return new URL(link).searchParams.get('token')!;
}

describe('forgot-password', () => {
  it('answers the same for a known and an unknown email', async () => {
    const user = await createUser(app);
    const known = await request('POST', '/auth/forgot-password', { email: user.email });
    const unknown = await request('POST', '/auth/forgot-password', { email: uniqueEmail('ghost') });
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(known.status);
    expect(await unknown.json()).toEqual(await known.json());
    await mail.waitFor(user.email);
  });

  it('mails a link to APP_HOST with a token of at least 128 bits, stored only hashed, valid one hour', async () => {
    const user = await createUser(app);
    const token = await requestResetToken(user.email);
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16);
    const rows = await app.container.db.selectFrom('passwordResetTokens').selectAll().where('userId', '=', user.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.tokenHash).toBe(sha256Hex(token));
    expect(JSON.stringify(rows)).not.toContain(token);
    const lifetime = rows[0]!.expiresAt.getTime() - rows[0]!.createdAt.getTime();
    expect(Math.abs(lifetime - RESET_TOKEN_LIFETIME_MS)).toBeLessThan(5_000);
  });

  it('sends nothing for an unknown email', async () => {
    const ghost = uniqueEmail('ghost');
    await request('POST', '/auth/forgot-password', { email: ghost });
    const known = await createUser(app);
    await requestResetToken(known.email); // jobs run in order: once this one is mailed, the ghost's ran too
    expect(mail.sent.some((sent) => sent.to.includes(ghost))).toBe(false);
  });

  it('refuses a malformed email with 400', async () => {
    const response = await request('POST', '/auth/forgot-password', { email: 'nope' });
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe('validation_failed');
  });

  it('throttles per email whatever the client address', async () => {
    const user = await createUser(app);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await request('POST', '/auth/forgot-password', { email: user.email })).status);
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses[5]).toBe(429);
  });

  it('retries the mail when the provider fails', async () => {
    const user = await createUser(app);
    mail.failNextRequests(1);
    await requestResetToken(user.email);
  });
});

describe('reset-password', () => {
  it('replaces the password, marks the token used and ends every session of the user', async () => {
    const user = await createUser(app);
    const session = await signIn(app, user);
    const token = await requestResetToken(user.email);
    const response = await request('POST', '/auth/reset-password', { token, newPassword: 'a brand new password' });
    expect(response.status).toBe(200);
    // Not logged in automatically.
    expect(response.headers.getSetCookie()).toEqual([]);
    expect((await app.request('GET', '/auth/me', { token: session })).status).toBe(401);
    expect((await request('POST', '/auth/login/credentials', { email: user.email, password: DEFAULT_PASSWORD })).status).toBe(
      401,
    );
    expect(
      (await request('POST', '/auth/login/credentials', { email: user.email, password: 'a brand new password' })).status,
    ).toBe(200);
    const row = await app.container.db
      .selectFrom('passwordResetTokens')
      .selectAll()
      .where('userId', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(row.usedAt).not.toBeNull();
  });

  it('refuses a used token', async () => {
    const user = await createUser(app);
    const token = await requestResetToken(user.email);
    expect((await request('POST', '/auth/reset-password', { token, newPassword: 'first new password' })).status).toBe(200);
    const again = await request('POST', '/auth/reset-password', { token, newPassword: 'second new password' });
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({ error: 'Invalid or expired reset token', code: 'invalid_reset_token' });
  });

  it('lets only one of two concurrent resets with the same token win', async () => {
    const user = await createUser(app);
    const token = await requestResetToken(user.email);
    const results = await Promise.all([
      request('POST', '/auth/reset-password', { token, newPassword: 'concurrent one' }),
      request('POST', '/auth/reset-password', { token, newPassword: 'concurrent two' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
  });

  it('refuses an expired token', async () => {
    const user = await createUser(app);
    const token = await requestResetToken(user.email);
    try {
      app.clock.advance(RESET_TOKEN_LIFETIME_MS + 1000);
      const response = await request('POST', '/auth/reset-password', { token, newPassword: 'too late password' });
      expect(response.status).toBe(400);
      expect((await response.json()).code).toBe('invalid_reset_token');
    } finally {
      app.clock.reset();
    }
  });

  it('voids earlier tokens when a new one is issued', async () => {
    const user = await createUser(app);
    const first = await requestResetToken(user.email);
    const second = await requestResetToken(user.email);
    expect((await request('POST', '/auth/reset-password', { token: first, newPassword: 'stale token password' })).status).toBe(
      400,
    );
    expect((await request('POST', '/auth/reset-password', { token: second, newPassword: 'fresh token password' })).status).toBe(
      200,
    );
  });

  it('refuses an unknown token and a weak or over-long password, keeping the token usable', async () => {
    expect((await request('POST', '/auth/reset-password', { token: 'made-up', newPassword: 'whatever password' })).status).toBe(
      400,
    );
    const user = await createUser(app);
    const token = await requestResetToken(user.email);
    const short = await request('POST', '/auth/reset-password', { token, newPassword: 'short' });
    expect(short.status).toBe(400);
    expect((await short.json()).code).toBe('validation_failed');
    const long = await request('POST', '/auth/reset-password', { token, newPassword: 'x'.repeat(73) });
    expect(long.status).toBe(400);
    expect((await request('POST', '/auth/reset-password', { token, newPassword: 'good new password' })).status).toBe(200);
    expect((await request('POST', '/auth/reset-password', {})).status).toBe(400);
  });
});
