import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../../test/helpers/actions.ts';
import { uniqueEmail } from '../../../../test/helpers/factories.ts';
import { startFakeModel } from '../../../../test/helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook, type WebhookSetup } from '../../../../test/helpers/webhooks.ts';
import type { UserLimits } from './registry.ts';

/**
 * An external auth provider may set limits on its users' model messages (getUserLimits):
 * actions run as such a user stop calling the model once the limit is reached, until its reset date.
 */
let app: TestApp;
let model: Awaited<ReturnType<typeof startFakeModel>>;
/** What the test's provider answers, per external user id. */
const limitsByUser = new Map<string, UserLimits | Error | 'hang'>();
const tokensSeen: string[] = [];
const DAY = 24 * 60 * 60 * 1000;

beforeAll(async () => {
  model = await startFakeModel();
  app = await startTestApp({
    ...model.env,
    USER_LIMITS_CACHE_SECONDS: '60',
    USER_LIMITS_TIMEOUT_SECONDS: '0.3',
    AUTH_RATE_LIMIT_PER_MINUTE: '1000',
  });
  app.container.externalAuthRegistry.registerExternalAuthProvider({
    name: 'quota',
    async validateToken(authToken) {
      const [externalUserId, email] = authToken.split('|');
      return { isValid: true, userData: { externalUserId: externalUserId!, email: email! } };
    },
    async getUserLimits(externalUserId, authToken) {
      tokensSeen.push(authToken);
      const answer = limitsByUser.get(externalUserId);
      if (answer instanceof Error) throw answer;
      if (answer === 'hang') return new Promise<never>(() => {});
      return answer ?? {};
    },
  });
  model.script(() => ({ text: 'done' }));
});
beforeEach(() => app.clock.reset());
afterAll(async () => {
  await app?.close();
  await model?.close();
});

/** A user signed in through the provider, a member of a fresh org whose webhook runs events as them. */
async function quotaUser(): Promise<{ setup: WebhookSetup; externalUserId: string; token: string; authToken: string }> {
  const setup = await setupWebhook(app);
  const externalUserId = `ext-${randomUUID().slice(0, 8)}`;
  const email = uniqueEmail('quota');
  const authToken = `${externalUserId}|${email}`;
  const signedIn = await (await app.request('POST', '/auth/external', { body: { authToken, providerName: 'quota' } })).json();
  await app.container.services.orgs.addMember(setup.tenant.org.slug, email);
  return { setup, externalUserId, token: signedIn.sessionToken, authToken };
}

async function runAs(setup: WebhookSetup, externalUserId: string) {
  const nowSeconds = Math.floor(app.clock.now().getTime() / 1000);
  const answer = await (
    await postEvent(app, setup, { eventType: 'x', userId: externalUserId, authProvider: 'quota' }, { nowSeconds })
  ).json();
  expect(answer).toMatchObject({ actionId: expect.any(String) });
  const { actionId } = answer;
  return waitForAction(app, { token: setup.tenant.token, org: setup.tenant.org.slug }, actionId, ['completed', 'failed']);
}

describe('user limits from the external auth provider', () => {
  it('counts model messages; at maxMessages new actions fail with user_limit_reached without calling the model, until the reset date', async () => {
    const { setup, externalUserId, token, authToken } = await quotaUser();
    const resetDate = new Date(app.clock.now().getTime() + DAY);
    limitsByUser.set(externalUserId, { maxMessages: 2, resetDate });

    expect((await runAs(setup, externalUserId)).status).toBe('completed');
    expect((await runAs(setup, externalUserId)).status).toBe('completed');
    expect(tokensSeen).toContain(authToken); // read with the user's stored token

    const calls = model.requests.length;
    const refused = await runAs(setup, externalUserId);
    expect(refused.status).toBe('failed');
    expect(refused.execution.error).toBe(
      `user_limit_reached: the run-as user has used 2 of 2 model messages until ${resetDate.toISOString()}`,
    );
    expect(refused.lifecycleEvents.at(-1)).toMatchObject({
      status: 'failed',
      cause: expect.stringMatching(/^user_limit_reached/),
    });
    expect(model.requests.length).toBe(calls);

    const me = await (await app.request('GET', '/auth/me', { token })).json();
    expect(me.limits).toEqual({ maxMessages: 2, resetDate: resetDate.toISOString(), usedMessages: 2 });

    // Past the reset date (and the cache), the provider's next window starts from zero.
    app.clock.advance(DAY + 1000);
    limitsByUser.set(externalUserId, { maxMessages: 2, resetDate: new Date(app.clock.now().getTime() + DAY) });
    expect((await runAs(setup, externalUserId)).status).toBe('completed');
    expect((await (await app.request('GET', '/auth/me', { token })).json()).limits).toMatchObject({ usedMessages: 1 });
  });

  it('concurrent actions of one user take its messages atomically: exactly maxMessages of them call the model', async () => {
    const { setup, externalUserId } = await quotaUser();
    limitsByUser.set(externalUserId, { maxMessages: 3, resetDate: new Date(app.clock.now().getTime() + DAY) });
    const rows = await Promise.all(Array.from({ length: 8 }, () => runAs(setup, externalUserId)));
    expect(rows.filter((row) => row.status === 'completed')).toHaveLength(3);
    for (const row of rows.filter((candidate) => candidate.status === 'failed'))
      expect(row.execution.error).toMatch(/^user_limit_reached: the run-as user has used 3 of 3 model messages/);
  });

  it('a provider that throws or does not answer sets no limit (the action runs); a user without a provider shows no limits', async () => {
    const failing = await quotaUser();
    limitsByUser.set(failing.externalUserId, new Error('limits service down'));
    expect((await runAs(failing.setup, failing.externalUserId)).status).toBe('completed');

    const hanging = await quotaUser();
    limitsByUser.set(hanging.externalUserId, 'hang');
    expect((await runAs(hanging.setup, hanging.externalUserId)).status).toBe('completed');
    expect((await (await app.request('GET', '/auth/me', { token: hanging.token })).json()).limits).toBeNull();

    const plain = await setupWebhook(app);
    expect((await (await app.request('GET', '/auth/me', { token: plain.tenant.token })).json()).limits).toBeNull();
  });
});
