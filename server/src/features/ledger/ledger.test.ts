import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
beforeAll(async () => {
  // No workers: actions stay queued, as ingest left them.
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

describe('GET /orgs/:org/ledger', () => {
  it('lists actions and deliveries newest first, filters them and pages with a cursor', async () => {
    const setup = await setupWebhook(app, { eventFilter: ['order.*'] });
    const { org, token } = setup.tenant;
    const created = [];
    for (let i = 0; i < 3; i++)
      created.push(await (await postEvent(app, setup, { eventType: 'order.created', externalId: `ord-${i}` })).json());
    const skipped = await (await postEvent(app, setup, { eventType: 'invoice.paid' })).json();
    await postEvent(app, setup, '{"broken": ');

    const all = await (await app.request('GET', `/orgs/${org.slug}/ledger`, { token })).json();
    expect(all.rows).toHaveLength(5);
    expect(all.rows[1]).toMatchObject({
      kind: 'delivery',
      deliveryStatus: 'skipped',
      eventId: skipped.eventId,
      replayable: true,
    });
    expect(all.rows[0]).toMatchObject({ kind: 'delivery', deliveryStatus: 'failed', reason: 'invalid_json', replayable: false });
    expect(all.rows[2]).toMatchObject({
      kind: 'action',
      status: 'queued',
      actionId: created[2].actionId,
      externalId: 'ord-2',
      id: created[2].actionId,
    });

    const filter = async (query: string) =>
      (await (await app.request('GET', `/orgs/${org.slug}/ledger?${query}`, { token })).json()).rows.length;
    expect(await filter('kind=action')).toBe(3);
    expect(await filter('kind=delivery')).toBe(2);
    expect(await filter('status=queued')).toBe(3);
    expect(await filter('status=skipped')).toBe(1);
    expect(await filter('eventType=invoice.paid')).toBe(1);
    expect(await filter(`webhookId=${setup.webhook.id}`)).toBe(5);
    expect(await filter('q=ord-1')).toBe(1);
    expect(await filter('q=ORDER')).toBe(3);
    expect(await filter('q=%25')).toBe(0);

    const first = await (await app.request('GET', `/orgs/${org.slug}/ledger?limit=2`, { token })).json();
    const second = await (
      await app.request('GET', `/orgs/${org.slug}/ledger?limit=2&cursor=${first.nextCursor}`, { token })
    ).json();
    const third = await (
      await app.request('GET', `/orgs/${org.slug}/ledger?limit=2&cursor=${second.nextCursor}`, { token })
    ).json();
    expect([...first.rows, ...second.rows, ...third.rows].map((row: { eventId: string }) => row.eventId)).toEqual(
      all.rows.map((row: { eventId: string }) => row.eventId),
    );
    expect(third.nextCursor).toBeNull();
    for (const query of ['kind=everything', 'status=bogus', 'status=', 'source=fax', 'webhookId=1', 'limit=0']) {
      const response = await app.request('GET', `/orgs/${org.slug}/ledger?${query}`, { token });
      expect(response.status, query).toBe(400);
      expect((await response.json()).code, query).toBe('validation_failed');
    }
  });

  it('pages through rows written together (one batch, one timestamp) without skipping or repeating any', async () => {
    const setup = await setupWebhook(app);
    const { org, token } = setup.tenant;
    await Promise.all(Array.from({ length: 30 }, (_, i) => postEvent(app, setup, { eventType: 'burst', externalId: `b-${i}` })));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { rows: Array<{ externalId: string }>; nextCursor: string | null } = await (
        await app.request('GET', `/orgs/${org.slug}/ledger?limit=7${cursor ? `&cursor=${cursor}` : ''}`, { token })
      ).json();
      seen.push(...page.rows.map((row) => row.externalId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(30);
    expect(new Set(seen).size).toBe(30);
  });

  it('shows one row by actionId or eventId with payload, redacted headers, scheme and lifecycle events', async () => {
    const setup = await setupWebhook(app);
    const { org, token } = setup.tenant;
    const secretHeaders = {
      'x-api-key': 'k-123',
      'x-auth': 'k-124',
      'x-access-key': 'k-125',
      api_key: 'k-126',
      'x-session-id': 'k-127',
      'x-credentials': 'k-128',
      'proxy-authorization': 'k-129',
      'x-db-password': 'k-130',
    };
    const clearHeaders = { 'x-request-id': 'req-9', 'idempotency-key': 'idem-1', 'user-agent': 'Sender/1.0' };
    const { actionId } = await (
      await postEvent(
        app,
        setup,
        { eventType: 'order.created', data: { n: 1 } },
        { headers: { ...secretHeaders, ...clearHeaders } },
      )
    ).json();
    const byAction = await (await app.request('GET', `/orgs/${org.slug}/ledger/${actionId}`, { token })).json();
    expect(byAction).toMatchObject({
      kind: 'action',
      actionId,
      status: 'queued',
      approvalState: 'none',
      verificationScheme: 'wh',
      ingressPayload: { eventType: 'order.created', data: { n: 1 } },
      execution: {
        runAsUserId: setup.tenant.admin.id,
        actionRuleId: setup.ruleId,
        agentId: setup.agentId,
        result: null,
        error: null,
      },
    });
    expect(byAction.lifecycleEvents).toEqual([
      { status: 'queued', cause: `webhook delivery ${byAction.eventId}`, data: null, at: expect.any(String) },
    ]);
    expect(byAction.headers['wh-signature']).toBe('[REDACTED]');
    for (const name of Object.keys(secretHeaders)) expect(byAction.headers[name], name).toBe('[REDACTED]');
    expect(byAction.headers).toMatchObject(clearHeaders);
    expect(JSON.stringify(byAction)).not.toMatch(/k-1\d\d/);
    const byEvent = await (await app.request('GET', `/orgs/${org.slug}/ledger/${byAction.eventId}`, { token })).json();
    expect(byEvent.actionId).toBe(actionId);
    expect((await app.request('GET', `/orgs/${org.slug}/ledger/${crypto.randomUUID()}`, { token })).status).toBe(404);
  });
});

describe('POST /orgs/:org/deliveries/:eventId/replay', () => {
  it("replays a skipped delivery with today's configuration, and refuses accepted and unusable ones with 409", async () => {
    const setup = await setupWebhook(app, { eventFilter: ['order.*'] });
    const { org, token } = setup.tenant;
    const skipped = await (await postEvent(app, setup, { eventType: 'invoice.paid' })).json();
    const accepted = await (await postEvent(app, setup, { eventType: 'order.created' })).json();
    await postEvent(app, setup, '{"nope"');
    const failed = (await (await app.request('GET', `/orgs/${org.slug}/ledger?status=failed`, { token })).json()).rows[0];

    const stillSkipped = await app.request('POST', `/orgs/${org.slug}/deliveries/${skipped.eventId}/replay`, { token });
    expect(await stillSkipped.json()).toMatchObject({ status: 'skipped', eventId: skipped.eventId });
    await app.request('PATCH', `/orgs/${org.slug}/webhooks/${setup.webhook.id}`, { token, body: { eventFilter: [] } });
    const replayed = await (
      await app.request('POST', `/orgs/${org.slug}/deliveries/${skipped.eventId}/replay`, { token })
    ).json();
    expect(replayed).toMatchObject({ status: 'accepted', actionId: expect.any(String) });

    const acceptedEventId = (await (await app.request('GET', `/orgs/${org.slug}/ledger/${accepted.actionId}`, { token })).json())
      .eventId;
    for (const eventId of [acceptedEventId, failed.eventId, skipped.eventId]) {
      const response = await app.request('POST', `/orgs/${org.slug}/deliveries/${eventId}/replay`, { token });
      expect(response.status).toBe(409);
      expect((await response.json()).code).toBe('not_replayable');
    }
  });

  it('keeps tenants apart: no reading, replaying or testing across orgs', async () => {
    const setup = await setupWebhook(app, { runAsUserId: null });
    const buffered = await (await postEvent(app, setup, { eventType: 'x' })).json();
    const intruder = await createTenant(app);
    const { org } = setup.tenant;
    expect((await app.request('GET', `/orgs/${org.slug}/ledger`, { token: intruder.token })).status).toBe(404);
    expect(
      (await app.request('GET', `/orgs/${intruder.org.slug}/ledger/${buffered.eventId}`, { token: intruder.token })).status,
    ).toBe(404);
    // By an action's id too (found through the delivery it names).
    const accepted = await (await postEvent(app, await setupWebhook(app), { eventType: 'x', externalId: 'cross-tenant' })).json();
    expect(
      (await app.request('GET', `/orgs/${intruder.org.slug}/ledger/${accepted.actionId}`, { token: intruder.token })).status,
    ).toBe(404);
    expect(
      (await app.request('POST', `/orgs/${intruder.org.slug}/deliveries/${buffered.eventId}/replay`, { token: intruder.token }))
        .status,
    ).toBe(404);
    const theirs = await (await app.request('GET', `/orgs/${intruder.org.slug}/ledger`, { token: intruder.token })).json();
    expect(theirs.rows).toEqual([]);
  });
});

describe('Send Test', () => {
  it("posts a signed test event to the public URL with the webhook's scheme", async () => {
    for (const scheme of ['wh', 'hmac_sha256', 'shared_token', 'none']) {
      const setup = await setupWebhook(app, { verificationScheme: scheme });
      const result = await (
        await app.request('POST', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/test`, {
          token: setup.tenant.token,
          body: { eventType: 'test.ping' },
        })
      ).json();
      expect(result, scheme).toMatchObject({
        mode: 'http',
        statusCode: 200,
        response: { success: true, actionId: expect.any(String) },
      });
    }
  });

  it("signs with the service's clock: a test event is verified however far that clock is from the machine's", async () => {
    const setup = await setupWebhook(app, { verificationScheme: 'wh' });
    app.clock.advance(24 * 3600_000);
    try {
      const result = await (
        await app.request('POST', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}/test`, {
          token: setup.tenant.token,
          body: { eventType: 'test.ping' },
        })
      ).json();
      expect(result).toMatchObject({ mode: 'http', statusCode: 200, response: { success: true } });
    } finally {
      app.clock.reset();
    }
  });

  it('creates the action directly for a selected internal user, without a signature', async () => {
    const setup = await setupWebhook(app, { runAsUserId: null });
    const { org, token, admin } = setup.tenant;
    const result = await (
      await app.request('POST', `/orgs/${org.slug}/webhooks/${setup.webhook.id}/test`, {
        token,
        body: { userId: admin.id, data: { hello: 'world' } },
      })
    ).json();
    expect(result).toMatchObject({ mode: 'direct', statusCode: 200, response: { success: true, actionId: expect.any(String) } });
    const row = await (await app.request('GET', `/orgs/${org.slug}/ledger/${result.response.actionId}`, { token })).json();
    expect(row.execution.runAsUserId).toBe(admin.id);
    expect(row.headers).toEqual({ 'x-agent-platform-send-test': 'direct' });
    const outsider = await createTenant(app);
    const refused = await app.request('POST', `/orgs/${org.slug}/webhooks/${setup.webhook.id}/test`, {
      token,
      body: { userId: outsider.admin.id },
    });
    expect(refused.status).toBe(400);
  });
});
