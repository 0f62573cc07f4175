import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

/**
 * A sender that lost our answer sends the same message again (Standard Webhooks senders keep the
 * wh-id and sign anew, for about 28 hours at Svix): it gets the first answer, and nothing is done twice.
 */
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_MESSAGE_ID_RETENTION_HOURS: '48' }, { workers: false });
});
beforeEach(() => app.clock.reset());
afterAll(async () => app?.close());

const HOUR = 60 * 60 * 1000;
const nowSeconds = () => Math.floor(app.clock.now().getTime() / 1000);
const actionsOf = (orgId: string) => app.container.db.selectFrom('actions').select('id').where('orgId', '=', orgId).execute();

describe('retries of one message', () => {
  it('the same wh-id and body, re-signed 10 minutes and 27 hours later, answers the first actionId; an event without externalId stays one action', async () => {
    const setup = await setupWebhook(app);
    const payload = { eventType: 'order.created', data: { total: 12 } };
    const first = await postEvent(app, setup, payload, { messageId: 'msg_retried', nowSeconds: nowSeconds() });
    expect(first.status).toBe(200);
    const { actionId } = await first.json();
    for (const laterMs of [10 * 60 * 1000, 27 * HOUR]) {
      app.clock.advance(laterMs);
      const retry = await postEvent(app, setup, payload, { messageId: 'msg_retried', nowSeconds: nowSeconds() });
      expect({ status: retry.status, body: await retry.json() }).toEqual({ status: 200, body: { success: true, actionId } });
    }
    expect(await app.container.services.deliveries.forgetOldMessageIds()).toBe(0); // not past its retention yet
    expect((await postEvent(app, setup, payload, { messageId: 'msg_retried', nowSeconds: nowSeconds() })).status).toBe(200);
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(1);
  });

  it('the same wh-id with another body is refused (401 message_replayed) and changes nothing', async () => {
    const setup = await setupWebhook(app);
    expect((await postEvent(app, setup, { eventType: 'a' }, { messageId: 'msg_twice' })).status).toBe(200);
    const other = await postEvent(app, setup, { eventType: 'b' }, { messageId: 'msg_twice' });
    expect({ status: other.status, code: (await other.json()).code }).toEqual({ status: 401, code: 'message_replayed' });
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(1);
  });

  it('a buffered, a skipped and a duplicate-externalId event answer their first answer again', async () => {
    const buffering = await setupWebhook(app, { actionRuleId: null });
    const buffered = await (await postEvent(app, buffering, { eventType: 'x' }, { messageId: 'msg_buffered' })).json();
    expect(buffered).toEqual({ success: true, buffered: true, eventId: expect.any(String), reason: 'no_action_rule_configured' });
    expect(await (await postEvent(app, buffering, { eventType: 'x' }, { messageId: 'msg_buffered' })).json()).toEqual(buffered);

    const filtering = await setupWebhook(app, { eventFilter: ['order.*'] });
    const skipped = await (await postEvent(app, filtering, { eventType: 'user.created' }, { messageId: 'msg_skipped' })).json();
    expect(skipped).toMatchObject({ skipped: true, reason: 'event_type_filtered' });
    expect(await (await postEvent(app, filtering, { eventType: 'user.created' }, { messageId: 'msg_skipped' })).json()).toEqual(
      skipped,
    );

    const setup = await setupWebhook(app);
    const created = await (await postEvent(app, setup, { eventType: 'x', externalId: 'ext-1' }, { messageId: 'msg_a' })).json();
    const duplicate = await (await postEvent(app, setup, { eventType: 'x', externalId: 'ext-1' }, { messageId: 'msg_b' })).json();
    expect(duplicate).toEqual({ success: true, actionId: created.actionId, alreadyExists: true });
    expect(await (await postEvent(app, setup, { eventType: 'x', externalId: 'ext-1' }, { messageId: 'msg_b' })).json()).toEqual(
      duplicate,
    );
  });

  it('50 concurrent posts of one message (one batch or several) all answer the same actionId', async () => {
    const setup = await setupWebhook(app, { rateLimitPerMinute: 1000 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => postEvent(app, setup, { eventType: 'order.created' }, { messageId: 'msg_concurrent' })),
    );
    const bodies = await Promise.all(responses.map((response) => response.json()));
    expect(new Set(responses.map((response) => response.status))).toEqual(new Set([200]));
    expect(new Set(bodies.map((body) => body.actionId)).size).toBe(1);
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(1);
  });

  it('past WEBHOOK_MESSAGE_ID_RETENTION_HOURS the id is forgotten, and counted in the metrics', async () => {
    const setup = await setupWebhook(app);
    expect((await postEvent(app, setup, { eventType: 'x' }, { messageId: 'msg_old', nowSeconds: nowSeconds() })).status).toBe(
      200,
    );
    app.clock.advance(49 * HOUR);
    expect(await app.container.services.deliveries.forgetOldMessageIds()).toBeGreaterThanOrEqual(1);
    const metrics = await (await app.request('GET', '/metrics')).text();
    expect(metrics).toMatch(/^webhook_message_ids_purged_total [1-9]/m);
    expect((await postEvent(app, setup, { eventType: 'x' }, { messageId: 'msg_old', nowSeconds: nowSeconds() })).status).toBe(
      200,
    );
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(2);
  });
});

describe('hmac_sha256 and shared_token', () => {
  it('hmac_sha256: the same signed request twice within the tolerance is one action, answered the same', async () => {
    const setup = await setupWebhook(app, { verificationScheme: 'hmac_sha256' });
    const at = nowSeconds();
    const first = await (await postEvent(app, setup, { eventType: 'x' }, { nowSeconds: at })).json();
    const again = await (await postEvent(app, setup, { eventType: 'x' }, { nowSeconds: at })).json();
    expect(again).toEqual(first);
    // The same body signed a second later is a new event.
    expect((await (await postEvent(app, setup, { eventType: 'x' }, { nowSeconds: at + 1 })).json()).actionId).not.toBe(
      first.actionId,
    );
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(2);
  });

  it('shared_token: x-webhook-token counts beside an Authorization header that is not the token', async () => {
    const setup = await setupWebhook(app, { verificationScheme: 'shared_token' });
    for (const authorization of ['Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer not-the-token']) {
      const response = await postEvent(
        app,
        setup,
        { eventType: 'x' },
        { headers: { authorization, 'x-webhook-token': setup.secret } },
      );
      expect({ authorization, status: response.status }).toEqual({ authorization, status: 200 });
    }
    const wrong = await postEvent(
      app,
      setup,
      { eventType: 'x' },
      { headers: { authorization: 'Bearer nope', 'x-webhook-token': 'nope' } },
    );
    expect(wrong.status).toBe(401);
  });
});
