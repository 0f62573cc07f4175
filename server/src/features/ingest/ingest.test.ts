import { Webhook } from 'standardwebhooks';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';
import { signStandardWebhook } from '../../lib/standard-webhooks.ts';
import { verifySender } from './verification.ts';

let app: TestApp;
beforeAll(async () => {
  // No workers: these tests look at what ingest stored; actions stay queued (the runtime has its own tests).
  app = await startTestApp({ TRUST_PROXY: 'true' }, { workers: false });
});
afterAll(async () => app?.close());

const actionsOf = (orgId: string) => app.container.db.selectFrom('actions').selectAll().where('orgId', '=', orgId).execute();
const deliveriesOf = (orgId: string) =>
  app.container.db.selectFrom('webhookDeliveries').selectAll().where('orgId', '=', orgId).execute();

describe('Standard Webhooks test vectors', () => {
  const vectors = JSON.parse(readFileSync(join(import.meta.dirname, '../../../test/fixtures/standard-webhooks.json'), 'utf8'));
  it('signs the valid vectors to their signatures and verifies them at their timestamp', () => {
    for (const vector of vectors.valid) {
      expect(signStandardWebhook(vector.secret, vector.id, vector.timestamp, Buffer.from(vector.payload))).toBe(vector.signature);
      const headers = {
        'webhook-id': vector.id,
        'webhook-timestamp': String(vector.timestamp),
        'webhook-signature': vector.signature,
      };
      expect(verifySender('wh', [vector.secret], headers, Buffer.from(vector.payload), vector.timestamp)).toEqual({
        messageId: vector.id,
      });
    }
  });
  it('rejects the invalid vectors', () => {
    for (const vector of vectors.invalid) {
      const headers = {
        'webhook-id': vector.id,
        'webhook-timestamp': String(vector.timestamp),
        'webhook-signature': vector.signature,
      };
      expect(() => verifySender('wh', [vector.secret], headers, Buffer.from(vector.payload), vector.timestamp)).toThrow(
        /No signature/,
      );
    }
  });
});

describe('POST /webhooks/actions/:org/:webhookIdentifier with scheme wh', () => {
  it('creates a queued action for a request signed by the standardwebhooks library (webhook-* headers)', async () => {
    const setup = await setupWebhook(app);
    const body = JSON.stringify({ eventType: 'order.created', externalId: 'ord-1', data: { total: 42 } });
    const id = 'msg_lib_1';
    const now = new Date();
    const signature = new Webhook(setup.secret).sign(id, now, body);
    const response = await app.request('POST', setup.path, {
      body,
      headers: {
        'content-type': 'application/json',
        'wh-id': id,
        'wh-timestamp': String(Math.floor(now.getTime() / 1000)),
        'wh-signature': signature,
      },
    });
    expect(response.status).toBe(200);
    const result = await response.json();
    expect(result).toEqual({ success: true, actionId: expect.any(String) });
    const [action] = await actionsOf(setup.tenant.org.id);
    expect(action).toMatchObject({
      id: result.actionId,
      status: 'queued',
      eventType: 'order.created',
      externalId: 'ord-1',
      runAsUserId: setup.tenant.admin.id,
      actionRuleId: setup.ruleId,
      agentId: setup.agentId,
    });
    expect(action!.data).toEqual({ total: 42 });
  });

  it('accepts the standard webhook-* header names and several signatures in one header', async () => {
    const setup = await setupWebhook(app);
    const body = JSON.stringify({ eventType: 'order.created' });
    const ts = Math.floor(Date.now() / 1000);
    const good = signStandardWebhook(setup.secret, 'msg_multi', ts, body);
    const response = await app.request('POST', setup.path, {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_multi',
        'webhook-timestamp': String(ts),
        'webhook-signature': `v1,bm90IHRoaXMgb25l v2,zzz ${good}`,
      },
    });
    expect(response.status).toBe(200);
  });

  it('answers alreadyExists with the first actionId for a repeated externalId', async () => {
    const setup = await setupWebhook(app);
    const first = await (await postEvent(app, setup, { eventType: 'order.created', externalId: 'dup-1' })).json();
    const second = await postEvent(app, setup, { eventType: 'order.created', externalId: 'dup-1' });
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual({ success: true, actionId: first.actionId, alreadyExists: true });
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(1);
  });

  it('refuses missing, stale, future, wrong and replayed signatures with 401 and stores nothing', async () => {
    const setup = await setupWebhook(app);
    const payload = { eventType: 'order.created' };
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[Promise<Response | { status: number; json(): Promise<any> }>, string]> = [
      [app.request('POST', setup.path, { body: payload }), 'signature_missing'],
      [postEvent(app, setup, payload, { nowSeconds: now - 400 }), 'timestamp_out_of_tolerance'],
      [postEvent(app, setup, payload, { nowSeconds: now + 400 }), 'timestamp_out_of_tolerance'],
      [postEvent(app, setup, payload, { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }), 'signature_invalid'],
      [postEvent(app, setup, payload, { scheme: 'hmac_sha256' }), 'signature_missing'],
      [postEvent(app, setup, payload, { scheme: 'shared_token' }), 'signature_missing'],
    ];
    for (const [request, code] of cases) {
      const response = await request;
      expect(response.status).toBe(401);
      expect((await response.json()).code).toBe(code);
    }
    const tampered = await app.request('POST', setup.path, {
      body: JSON.stringify({ eventType: 'order.created', data: { total: 1 } }),
      headers: {
        'content-type': 'application/json',
        'wh-id': 'm1',
        'wh-timestamp': String(now),
        'wh-signature': signStandardWebhook(
          setup.secret,
          'm1',
          now,
          JSON.stringify({ eventType: 'order.created', data: { total: 1000 } }),
        ),
      },
    });
    expect(tampered.status).toBe(401);
    expect(await deliveriesOf(setup.tenant.org.id)).toHaveLength(0);

    expect((await postEvent(app, setup, payload, { messageId: 'msg_once' })).status).toBe(200);
    const replay = await postEvent(app, setup, { ...payload, eventType: 'order.changed' }, { messageId: 'msg_once' });
    expect(replay.status).toBe(401);
    expect((await replay.json()).code).toBe('message_replayed');
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(1);
  });
});

describe('other verification schemes', () => {
  it('hmac_sha256: v1=<hex> of "<timestamp>.<raw body>", computed by hand', async () => {
    const { createHmac } = await import('node:crypto');
    const setup = await setupWebhook(app, { verificationScheme: 'hmac_sha256' });
    const body = '{"eventType":"invoice.paid",  "data": {"n": 1}}';
    const ts = Math.floor(Date.now() / 1000);
    const hex = createHmac('sha256', setup.secret).update(`${ts}.${body}`).digest('hex');
    const ok = await app.request('POST', setup.path, {
      body,
      headers: { 'content-type': 'application/json', 'x-webhook-timestamp': String(ts), 'x-webhook-signature': `v1=${hex}` },
    });
    expect(ok.status).toBe(200);
    const bad = await app.request('POST', setup.path, {
      body,
      headers: {
        'content-type': 'application/json',
        'x-webhook-timestamp': String(ts),
        'x-webhook-signature': `v1=${hex.replace(/^./, hex[0] === 'a' ? 'b' : 'a')}`,
      },
    });
    expect(bad.status).toBe(401);
    const stale = await app.request('POST', setup.path, {
      body,
      headers: {
        'content-type': 'application/json',
        'x-webhook-timestamp': String(ts - 400),
        'x-webhook-signature': `v1=${createHmac('sha256', setup.secret)
          .update(`${ts - 400}.${body}`)
          .digest('hex')}`,
      },
    });
    expect(stale.status).toBe(401);
    expect((await postEvent(app, setup, { eventType: 'x' }, { scheme: 'wh' })).status).toBe(401);
  });

  it('shared_token: Authorization Bearer or x-webhook-token', async () => {
    const setup = await setupWebhook(app, { verificationScheme: 'shared_token' });
    const body = { eventType: 'ticket.opened' };
    expect((await app.request('POST', setup.path, { body, headers: { authorization: `Bearer ${setup.secret}` } })).status).toBe(
      200,
    );
    expect((await app.request('POST', setup.path, { body, headers: { 'x-webhook-token': setup.secret } })).status).toBe(200);
    expect((await app.request('POST', setup.path, { body, headers: { 'x-webhook-token': `${setup.secret}x` } })).status).toBe(
      401,
    );
    expect((await app.request('POST', setup.path, { body })).status).toBe(401);
  });

  it('none: the URL is the credential', async () => {
    const setup = await setupWebhook(app, { verificationScheme: 'none' });
    expect(setup.webhook.webhookIdentifier.length).toBeGreaterThanOrEqual(32);
    expect((await app.request('POST', setup.path, { body: { eventType: 'ping' } })).status).toBe(200);
  });
});

describe('front-door checks', () => {
  it('404 for an unknown org, an unknown identifier, or an identifier of another org; the org may be slug or id', async () => {
    const setup = await setupWebhook(app);
    const other = await setupWebhook(app);
    const [, , , slug, identifier] = setup.path.split('/');
    for (const path of [
      `/webhooks/actions/no-such-org/${identifier}`,
      `/webhooks/actions/${slug}/unknown-identifier`,
      `/webhooks/actions/${other.tenant.org.slug}/${identifier}`,
    ]) {
      const response = await postEvent(app, setup, { eventType: 'x' }, { path });
      expect(response.status).toBe(404);
      expect((await response.json()).code).toBe('not_found');
    }
    expect(
      (await postEvent(app, setup, { eventType: 'x' }, { path: `/webhooks/actions/${setup.tenant.org.id}/${identifier}` }))
        .status,
    ).toBe(200);
  });

  it('403 for a disabled webhook, a blocked address or range, and an origin not allowed', async () => {
    const setup = await setupWebhook(app, { blockedIps: ['10.66.0.0/16', '192.0.2.7'], allowedOrigins: ['https://crm.example'] });
    const blocked = await postEvent(app, setup, { eventType: 'x' }, { headers: { 'x-forwarded-for': '10.66.4.2' } });
    expect(blocked.status).toBe(403);
    expect((await blocked.json()).code).toBe('ip_blocked');
    expect((await postEvent(app, setup, { eventType: 'x' }, { headers: { 'x-forwarded-for': '192.0.2.7' } })).status).toBe(403);
    expect((await postEvent(app, setup, { eventType: 'x' }, { headers: { 'x-forwarded-for': '192.0.2.8' } })).status).toBe(200);
    const origin = await postEvent(app, setup, { eventType: 'x' }, { headers: { origin: 'https://evil.example' } });
    expect(origin.status).toBe(403);
    expect((await origin.json()).code).toBe('origin_blocked');
    expect((await postEvent(app, setup, { eventType: 'x' }, { headers: { origin: 'https://crm.example' } })).status).toBe(200);

    await app.request('PATCH', `/orgs/${setup.tenant.org.slug}/webhooks/${setup.webhook.id}`, {
      token: setup.tenant.token,
      body: { enabled: false },
    });
    const disabled = await postEvent(app, setup, { eventType: 'x' });
    expect(disabled.status).toBe(403);
    expect((await disabled.json()).code).toBe('webhook_disabled');
  });

  it('429 with Retry-After past the per-webhook limit', async () => {
    const setup = await setupWebhook(app, { rateLimitPerMinute: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await postEvent(app, setup, { eventType: 'x' })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await postEvent(app, setup, { eventType: 'x' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await limited.json()).code).toBe('rate_limited');
  });

  it('413 for a body over the limit: declared, chunked without Content-Length, or sent slowly', async () => {
    const setup = await setupWebhook(app, { maxPayloadBytes: 2048 });
    const big = JSON.stringify({ eventType: 'x', data: { blob: 'x'.repeat(5000) } });
    const declared = await postEvent(app, setup, big);
    expect(declared.status).toBe(413);
    expect((await declared.json()).code).toBe('payload_too_large');

    const { request } = await import('node:http');
    const streamed = (slow: boolean) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${app.baseUrl}${setup.path}`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) =>
          error.code === 'ECONNRESET' || error.code === 'EPIPE' ? resolve(-1) : reject(error),
        );
        let sent = 0;
        const tick = () => {
          if (sent > 20) return req.end();
          req.write('x'.repeat(500));
          sent++;
          if (slow) setTimeout(tick, 10);
          else tick();
        };
        tick();
      });
    expect(await streamed(false)).toBe(413);
    expect(await streamed(true)).toBe(413);
    expect(await deliveriesOf(setup.tenant.org.id)).toHaveLength(0);
  });

  it('400 for invalid JSON, wrong types and a missing eventType, recorded as failed deliveries without actions', async () => {
    const setup = await setupWebhook(app);
    const cases: Array<[string, string]> = [
      ['{"eventType": ', 'invalid_json'],
      ['{"eventType": 42}', 'validation_failed'],
      ['{"data": {}}', 'validation_failed'],
      ['{"eventType": "x", "toolApprovals": "all"}', 'validation_failed'],
      ['[1, 2]', 'validation_failed'],
    ];
    for (const [body, code] of cases) {
      const response = await postEvent(app, setup, body);
      expect(response.status, body).toBe(400);
      expect((await response.json()).code).toBe(code);
    }
    expect(await actionsOf(setup.tenant.org.id)).toHaveLength(0);
    const rows = await deliveriesOf(setup.tenant.org.id);
    expect(rows).toHaveLength(5);
    expect(rows.every((row) => row.status === 'failed' && row.replayable === false)).toBe(true);
  });

  it('keeps the hidden legacy path working, absent from the OpenAPI document', async () => {
    const setup = await setupWebhook(app);
    const legacy = setup.path.replace('/webhooks/actions/', '/webhooks/ingest/');
    expect((await postEvent(app, setup, { eventType: 'x' }, { path: legacy })).status).toBe(200);
    const spec = await (await app.request('GET', '/openapi.json')).json();
    expect(spec.paths['/webhooks/actions/{org}/{webhookIdentifier}']).toBeDefined();
    expect(Object.keys(spec.paths).some((path) => path.startsWith('/webhooks/ingest'))).toBe(false);
  });
});
