import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AgentPlatformClient,
  AgentPlatformError,
  constructEvent,
  verify,
  verifyOrThrow,
  WebhookVerificationError,
  type CallbackEvent,
} from '@agent-platform/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackEventSchema } from '../../server/src/features/callbacks/callbacks.schemas.ts';
import { eventually } from '../../server/test/helpers/eventually.ts';
import { addCallback, startCallbackStack } from '../../server/test/helpers/callbacks.ts';
import type { TestApp } from '../../server/test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../server/test/helpers/webhooks.ts';

const vectors = JSON.parse(
  readFileSync(new URL('../../server/test/fixtures/standard-webhooks.json', import.meta.url), 'utf8'),
) as {
  valid: Array<{ secret: string; id: string; timestamp: number; payload: string; signature: string }>;
  invalid: Array<{ secret: string; id: string; timestamp: number; payload: string; signature: string }>;
};
const headersOf = (vector: { id: string; timestamp: number; signature: string }) => ({
  'webhook-id': vector.id,
  'webhook-timestamp': String(vector.timestamp),
  'webhook-signature': vector.signature,
});

describe('verifying with the Standard Webhooks vectors', () => {
  it('accepts the valid ones, under either header family, and refuses the invalid ones', () => {
    for (const vector of vectors.valid) {
      expect(verify(vector.payload, headersOf(vector), vector.secret, { nowSeconds: vector.timestamp })).toBe(true);
      const wh = {
        'wh-id': vector.id,
        'wh-timestamp': String(vector.timestamp),
        'wh-signature': `v1,bm90IHRoaXMgb25l ${vector.signature}`,
      };
      expect(verify(Buffer.from(vector.payload), new Headers(wh), vector.secret, { nowSeconds: vector.timestamp })).toBe(true);
      expect(() =>
        verifyOrThrow(vector.payload, headersOf(vector), vector.secret, { nowSeconds: vector.timestamp + 301 }),
      ).toThrow(expect.objectContaining({ code: 'timestamp_too_old' }));
      expect(() =>
        verifyOrThrow(vector.payload, headersOf(vector), vector.secret, { nowSeconds: vector.timestamp - 301 }),
      ).toThrow(expect.objectContaining({ code: 'timestamp_too_new' }));
    }
    for (const vector of vectors.invalid) {
      expect(verify(vector.payload, headersOf(vector), vector.secret, { nowSeconds: vector.timestamp })).toBe(false);
      expect(() => constructEvent(vector.payload, headersOf(vector), vector.secret, { nowSeconds: vector.timestamp })).toThrow(
        WebhookVerificationError,
      );
    }
    expect(() => verifyOrThrow('{}', {}, vectors.valid[0]!.secret)).toThrow(expect.objectContaining({ code: 'missing_headers' }));
    expect(() =>
      verifyOrThrow('{}', { ...headersOf(vectors.valid[0]!), 'webhook-timestamp': 'soon' }, vectors.valid[0]!.secret),
    ).toThrow(expect.objectContaining({ code: 'invalid_timestamp' }));
  });
});

let stack: Awaited<ReturnType<typeof startCallbackStack>>;
let app: TestApp;
let model: typeof stack.model;
let receiver: typeof stack.receiver;
beforeAll(async () => {
  stack = await startCallbackStack({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' });
  ({ app, model, receiver } = stack);
  model.script(() => ({ text: 'done' }));
});
afterAll(async () => stack?.close());

const clientFor = (setup: WebhookSetup, options: Partial<ConstructorParameters<typeof AgentPlatformClient>[0]> = {}) =>
  new AgentPlatformClient({
    baseUrl: app.baseUrl,
    org: setup.tenant.org.slug,
    webhookIdentifier: setup.webhook.webhookIdentifier,
    secret: setup.secret,
    scheme: setup.webhook.verificationScheme,
    ...options,
  });

describe('sending events against the real server', () => {
  it.each(['wh', 'hmac_sha256', 'shared_token', 'none'] as const)(
    'signs for the %s scheme: created, then alreadyExists for the same externalId',
    async (scheme) => {
      const setup = await setupWebhook(app, { verificationScheme: scheme });
      const client = clientFor(setup, { scheme });
      const created = await client.send({ eventType: 'order.created', externalId: `sdk-${scheme}`, data: { order_id: 1 } });
      expect(created).toEqual({ outcome: 'created', actionId: expect.any(String) });
      expect(await client.send({ eventType: 'order.created', externalId: `sdk-${scheme}` })).toEqual({
        outcome: 'alreadyExists',
        actionId: (created as { actionId: string }).actionId,
      });
    },
  );

  it('reports a buffered event, and throws a typed error for a wrong secret or scheme without retrying', async () => {
    const setup = await setupWebhook(app, { actionRuleId: null, agentId: null });
    expect(await clientFor(setup).send({ eventType: 'order.created' })).toEqual({
      outcome: 'buffered',
      eventId: expect.any(String),
      reason: 'no_action_rule_configured',
    });
    const wrong = clientFor(setup, { secret: `whsec_${Buffer.alloc(24, 7).toString('base64')}` });
    await expect(wrong.send({ eventType: 'x' })).rejects.toMatchObject({
      name: 'AgentPlatformError',
      status: 401,
      code: 'signature_invalid',
    });
    await expect(clientFor(setup, { scheme: 'none' }).send({ eventType: 'x' })).rejects.toBeInstanceOf(AgentPlatformError);
    expect(() => clientFor(setup, { secret: undefined })).toThrow(TypeError);
  });

  it('retries 429 and 5xx, waiting as Retry-After says; the externalId keeps it to one action', async () => {
    const setup = await setupWebhook(app);
    const target = new URL(app.baseUrl);
    const seen: number[] = [];
    // A proxy in front of the server: the first answer is 429 with Retry-After, the second a 503 after forwarding.
    const proxy = createServer((request, response) => {
      seen.push(Date.now());
      if (seen.length === 1)
        return void response
          .writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' })
          .end('{"error":"slow down","code":"rate_limited"}');
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, path: request.url, method: request.method, headers: request.headers },
        (answer) => {
          if (seen.length === 2) {
            answer.resume();
            return void response.writeHead(503).end();
          }
          response.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(response);
        },
      );
      request.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const client = clientFor(setup, { baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
      const result = await client.send({ eventType: 'order.created' });
      // The second attempt reached the server before its answer was lost: the third, with the same
      // message id, gets that first answer.
      expect(result.outcome).toBe('created');
      expect(seen).toHaveLength(3);
      expect(seen[1]! - seen[0]!).toBeGreaterThanOrEqual(950);
      const ledger = await (
        await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger?kind=action`, { token: setup.tenant.token })
      ).json();
      expect(ledger.rows).toHaveLength(1);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

describe('verifying real callbacks', () => {
  it('constructEvent returns the typed event from a callback the server sent; a changed body or a stale one is refused', async () => {
    const setup = await setupWebhook(app);
    const endpoint = await addCallback(app, setup, { url: receiver.url('/sdk'), events: ['action.completed'] });
    const sent = await clientFor(setup).send({ eventType: 'order.created', externalId: 'sdk-callback' });
    const actionId = (sent as { actionId: string }).actionId;
    const [callback] = await eventually('the callback', () =>
      receiver.forAction(actionId).length > 0 ? receiver.forAction(actionId) : undefined,
    );
    const event: CallbackEvent = constructEvent(callback!.body, callback!.headers, endpoint.secret);
    if (event.type !== 'action.completed') throw new Error(`unexpected ${event.type}`);
    expect(event.data).toMatchObject({ actionId, status: 'completed', externalId: 'sdk-callback', result: { text: 'done' } });
    // The server's schema of its callbacks (the one its deliveries are served with) reads what it sent the same way, and
    // every event it allows is one the SDK types: the typecheck that `npm test` runs first fails here when the SDK falls behind.
    const served: CallbackEvent = callbackEventSchema.parse(JSON.parse(callback!.body));
    expect(served).toEqual(event);
    const onlyWh = Object.fromEntries(
      Object.entries(callback!.headers).filter(([name]) => !name.startsWith('webhook-')),
    ) as Record<string, string>;
    expect(verify(callback!.body, onlyWh, endpoint.secret)).toBe(true);
    expect(() => constructEvent(callback!.body.replace('completed', 'failed'), callback!.headers, endpoint.secret)).toThrow(
      expect.objectContaining({ code: 'invalid_signature' }),
    );
    expect(() =>
      constructEvent(callback!.body, callback!.headers, endpoint.secret, { nowSeconds: Math.floor(Date.now() / 1000) + 3600 }),
    ).toThrow(expect.objectContaining({ code: 'timestamp_too_old' }));
  });
});
