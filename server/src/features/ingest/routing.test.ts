import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usersRepo } from '../users/users.repo.ts';
import { createUser } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';
import { MAX_BUFFERED_ATTEMPTS } from './deliveries.service.ts';

let app: TestApp;
beforeAll(async () => {
  // No workers: buffered deliveries are retried by calling the service; actions stay queued.
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

const patchWebhook = (setup: WebhookSetup, body: Record<string, unknown>) =>
  app.request('PATCH', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}`, { token: setup.tenant.token, body });
const patchRule = (setup: WebhookSetup, body: Record<string, unknown>) =>
  app.request('PATCH', `/orgs/${setup.tenant.org.slug}/action-rules/${setup.ruleId}`, { token: setup.tenant.token, body });
const action = (id: string) => app.container.db.selectFrom('actions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const delivery = (id: string) =>
  app.container.db.selectFrom('webhookDeliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

async function expectBuffered(setup: WebhookSetup, payload: Record<string, unknown>, reason: string) {
  const response = await postEvent(app, setup, payload);
  expect(response.status).toBe(202);
  const body = await response.json();
  expect(body).toEqual({ success: true, buffered: true, eventId: expect.any(String), reason });
  expect(body.actionId).toBeUndefined();
  return body.eventId as string;
}

describe('buffering', () => {
  it('user_unresolved when no run-as user can be found; the row shows in the ledger', async () => {
    const setup = await setupWebhook(app, { runAsUserId: null });
    const eventId = await expectBuffered(setup, { eventType: 'x', userId: 'ext-404', authProvider: 'jwt' }, 'user_unresolved');
    const row = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger/${eventId}`, { token: setup.tenant.token })
    ).json();
    expect(row).toMatchObject({ kind: 'delivery', status: 'buffered', reason: 'user_unresolved', replayable: true });
  });

  it('no_action_rule_configured, action_rule_not_found and action_rule_disabled', async () => {
    const setup = await setupWebhook(app, { actionRuleId: null });
    await expectBuffered(setup, { eventType: 'x' }, 'no_action_rule_configured');
    await expectBuffered(setup, { eventType: 'x', actionRuleId: crypto.randomUUID() }, 'action_rule_not_found');
    await expectBuffered(setup, { eventType: 'x', actionRuleId: 'not-a-uuid' }, 'action_rule_not_found');
    const other = await setupWebhook(app);
    await expectBuffered(setup, { eventType: 'x', actionRuleId: other.ruleId }, 'action_rule_not_found');
    await patchRule(setup, { enabled: false });
    await expectBuffered(setup, { eventType: 'x', actionRuleId: setup.ruleId }, 'action_rule_disabled');
    await patchRule(setup, { enabled: true });
    expect((await postEvent(app, setup, { eventType: 'x', actionRuleId: setup.ruleId })).status).toBe(200);
  });

  it('outside_schedule until the window opens', async () => {
    const now = new Date();
    const closedDay = (now.getUTCDay() + 3) % 7;
    const setup = await setupWebhook(app, {
      schedule: { timezone: 'UTC', windows: [{ days: [closedDay], start: '00:00', end: '24:00' }] },
    });
    const eventId = await expectBuffered(setup, { eventType: 'x' }, 'outside_schedule');
    const row = await delivery(eventId);
    expect(row.nextAttemptAt!.getUTCDay()).toBe(closedDay);
    await patchWebhook(setup, {
      schedule: { timezone: 'UTC', windows: [{ days: [0, 1, 2, 3, 4, 5, 6], start: '00:00', end: '24:00' }] },
    });
    expect((await postEvent(app, setup, { eventType: 'x' })).status).toBe(200);
  });

  it('skips an event the filter drops: recorded, answered 202, no action', async () => {
    const setup = await setupWebhook(app, { eventFilter: ['order.*', 'invoice.paid'] });
    expect((await postEvent(app, setup, { eventType: 'order.created' })).status).toBe(200);
    expect((await postEvent(app, setup, { eventType: 'invoice.paid' })).status).toBe(200);
    const skipped = await postEvent(app, setup, { eventType: 'invoice.created' });
    expect(skipped.status).toBe(202);
    const body = await skipped.json();
    expect(body).toMatchObject({ success: true, skipped: true, reason: 'event_type_filtered' });
    expect((await delivery(body.eventId)).status).toBe('skipped');
  });
});

describe('run-as user', () => {
  it('takes (a) the external user of authProvider, then (b) an internal user id, then (c) the default; members only', async () => {
    const setup = await setupWebhook(app);
    const { org } = setup.tenant;
    const external = await createUser(app, { org: org.slug });
    await usersRepo.update(app.container.db, external.id, { externalProvider: 'jwt', externalUserId: 'ext-7' });
    const internal = await createUser(app, { org: org.slug });
    const outsider = await createUser(app);

    const runAs = async (payload: Record<string, unknown>) =>
      (await action((await (await postEvent(app, setup, { eventType: 'x', ...payload })).json()).actionId)).runAsUserId;
    expect(await runAs({ userId: 'ext-7', authProvider: 'jwt' })).toBe(external.id);
    expect(await runAs({ userId: internal.id })).toBe(internal.id);
    expect(await runAs({ userId: outsider.id })).toBe(setup.tenant.admin.id);
    expect(await runAs({})).toBe(setup.tenant.admin.id);
  });
});

describe('per-request tool approvals', () => {
  it('keeps valid overrides only when the webhook allows them; drops invalid modes; keeps unknown tools', async () => {
    const overrides = { generateDocument: 'ask', sendEmail: 'sometimes', someFutureTool: 'allow' };
    const off = await setupWebhook(app);
    const offAction = await action(
      (await (await postEvent(app, off, { eventType: 'x', toolApprovals: overrides })).json()).actionId,
    );
    expect(offAction.toolApprovals).toEqual({});
    const on = await setupWebhook(app, { allowRequestOverrides: true });
    const onAction = await action(
      (await (await postEvent(app, on, { eventType: 'x', toolApprovals: overrides })).json()).actionId,
    );
    expect(onAction.toolApprovals).toEqual({ generateDocument: 'ask', someFutureTool: 'allow' });
  });
});

describe('idempotency under concurrency', () => {
  it('500 concurrent posts with one externalId create exactly one action, and every answer is 200 with its id', async () => {
    const setup = await setupWebhook(app, { rateLimitPerMinute: 1000 });
    const responses = await Promise.all(
      Array.from({ length: 500 }, () => postEvent(app, setup, { eventType: 'order.created', externalId: 'same-500' })),
    );
    const bodies = await Promise.all(responses.map((response) => response.json()));
    expect(responses.every((response) => response.status === 200)).toBe(true);
    const ids = new Set(bodies.map((body) => body.actionId));
    expect(ids.size).toBe(1);
    expect(bodies.filter((body) => body.alreadyExists !== true)).toHaveLength(1);
    const actions = await app.container.db.selectFrom('actions').select('id').where('orgId', '=', setup.tenant.org.id).execute();
    expect(actions.map((a) => a.id)).toEqual([...ids]);
  }, 60_000); // 500 requests on PGlite's one connection beside the other test files took up to 22 s

  it('concurrent posts with one wh-id: the first is accepted, every other is a replay, written together or not', async () => {
    const setup = await setupWebhook(app, { rateLimitPerMinute: 1000 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        postEvent(app, setup, { eventType: 'order.created', externalId: `wh-${i}` }, { messageId: 'msg_shared' }),
      ),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, ...Array.from({ length: 49 }, () => 401)]);
    const replays = await Promise.all(responses.filter((response) => response.status === 401).map((response) => response.json()));
    expect(new Set(replays.map((body) => body.code))).toEqual(new Set(['message_replayed']));
    const actions = await app.container.db.selectFrom('actions').select('id').where('orgId', '=', setup.tenant.org.id).execute();
    expect(actions).toHaveLength(1);
    const deliveries = await app.container.db
      .selectFrom('webhookDeliveries')
      .select('status')
      .where('orgId', '=', setup.tenant.org.id)
      .execute();
    expect(deliveries).toEqual([{ status: 'accepted' }]);
  });
});

describe('buffered retries and dead letters', () => {
  it('a worker retry turns a buffered delivery into an action once the configuration is fixed', async () => {
    const setup = await setupWebhook(app);
    await patchRule(setup, { enabled: false });
    const eventId = await expectBuffered(setup, { eventType: 'x', externalId: 'later-1' }, 'action_rule_disabled');
    await patchRule(setup, { enabled: true });
    app.clock.advance(61_000);
    try {
      await app.container.services.deliveries.retryDue();
    } finally {
      app.clock.reset();
    }
    const row = await delivery(eventId);
    expect(row.status).toBe('accepted');
    expect(row.attempts).toBe(2);
    const created = await action(row.actionId!);
    expect(created).toMatchObject({ status: 'queued', externalId: 'later-1', deliveryId: eventId });
  });

  it(`dead-letters a delivery still buffered after ${MAX_BUFFERED_ATTEMPTS} attempts, and an operator can replay it`, async () => {
    const setup = await setupWebhook(app, { runAsUserId: null });
    const eventId = await expectBuffered(setup, { eventType: 'x' }, 'user_unresolved');
    try {
      for (let i = 0; i < MAX_BUFFERED_ATTEMPTS; i++) {
        app.clock.advance(3 * 60 * 60 * 1000);
        await app.container.services.deliveries.retryDue();
      }
    } finally {
      app.clock.reset();
    }
    const dead = await delivery(eventId);
    expect(dead.status).toBe('dead_lettered');
    expect(dead.attempts).toBe(MAX_BUFFERED_ATTEMPTS);
    await patchWebhook(setup, { runAsUserId: setup.tenant.admin.id });
    const replay = await app.request('POST', `/orgs/${setup.tenant.org.slug}/deliveries/${eventId}/replay`, {
      token: setup.tenant.token,
    });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toMatchObject({ status: 'accepted', eventId, actionId: expect.any(String) });
  });
});
