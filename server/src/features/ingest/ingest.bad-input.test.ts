import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../../lib/json-input.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
});
afterAll(async () => app?.close());

const deliveriesOf = (orgId: string) =>
  app.container.db
    .selectFrom('webhookDeliveries')
    .select(['status', 'reason', 'rawBody'])
    .where('orgId', '=', orgId)
    .orderBy('createdAt')
    .execute();

/** Healthz answers while `work` runs: the slowest answer, in ms. */
async function slowestHealthzDuring<T>(work: Promise<T>): Promise<{ result: T; slowestMs: number }> {
  let done = false;
  let slowestMs = 0;
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      await app.request('GET', '/healthz');
      slowestMs = Math.max(slowestMs, performance.now() - started);
    }
  })();
  const result = await work.finally(() => (done = true));
  await probe;
  return { result, slowestMs };
}

describe('signed bodies that JSON allows but nothing can store', () => {
  it('NUL, an unpaired surrogate (in a value or a key) and deep nesting: 400 invalid_payload, recorded as a failed delivery with a storable copy', async () => {
    const setup = await setupWebhook(app);
    const bodies = [
      '{"eventType":"order.created","data":{"note":"a\\u0000b"}}',
      '{"eventType":"order\\ud800"}',
      '{"eventType":"x","data":{"\\udc00key":1}}',
      '{"eventType":"x","externalId":"e\\u0000"}',
      `{"eventType":"x","data":{"deep":${'['.repeat(5_000)}${']'.repeat(5_000)}}}`,
      `{"eventType":"x","data":{"deep":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}}`,
    ];
    for (const body of bodies) {
      const response = await postEvent(app, setup, body);
      expect({ body: body.slice(0, 60), status: response.status, answer: await response.json() }).toEqual({
        body: body.slice(0, 60),
        status: 400,
        answer: { error: expect.any(String), code: 'invalid_payload' },
      });
    }
    const rows = await deliveriesOf(setup.tenant.org.id);
    expect(rows.map((row) => [row.status, row.reason])).toEqual(bodies.map(() => ['failed', 'invalid_payload']));
    expect(rows[0]!.rawBody).toBe(bodies[0]);

    // One level less than the limit is fine.
    const fine = `{"eventType":"x","data":{"deep":${'['.repeat(MAX_JSON_DEPTH - 3)}${']'.repeat(MAX_JSON_DEPTH - 3)}}}`;
    expect((await postEvent(app, setup, fine)).status).toBe(200);
  });

  it('a NUL or a byte outside [A-Za-z0-9_-] in the org or identifier: 404 without a lookup', async () => {
    const setup = await setupWebhook(app);
    const [, , , org, identifier] = setup.path.split('/');
    for (const path of [
      `/webhooks/actions/${org}/${identifier}%00`,
      `/webhooks/actions/%00/${identifier}`,
      `/webhooks/actions/${org}/${identifier}%2F`,
      `/webhooks/actions/${org}/${'a'.repeat(5_000)}`,
    ]) {
      const response = await postEvent(app, setup, { eventType: 'x' }, { path });
      expect({ path: path.slice(0, 80), status: response.status, body: await response.json() }).toEqual({
        path: path.slice(0, 80),
        status: 404,
        body: { error: 'No webhook at this URL', code: 'not_found' },
      });
    }
  });

  it(`a body at a 10 MB limit with ${MAX_JSON_VALUES + 1} or 700,000 keys is refused before it is parsed; one at the limit is stored`, async () => {
    const setup = await setupWebhook(app, { maxPayloadBytes: 10 * 1024 * 1024 });
    const keys = (count: number) =>
      `{"eventType":"x","data":{${Array.from({ length: count }, (_, index) => `"${index.toString(36)}":0`).join(',')}}}`;
    const parse = vi.spyOn(JSON, 'parse');
    for (const count of [700_000, MAX_JSON_VALUES]) {
      const body = keys(count);
      expect(body.length).toBeLessThan(10 * 1024 * 1024);
      const { result: response, slowestMs } = await slowestHealthzDuring(postEvent(app, setup, body));
      // How long the event loop was held is this machine's business (printed); that the body never reached the parser is ours.
      console.info(
        `${count} keys (${body.length} bytes): ${response.status}; slowest /healthz meanwhile ${slowestMs.toFixed(1)} ms`,
      );
      expect(await response.json()).toEqual({
        error: `The body has more than ${MAX_JSON_VALUES} values`,
        code: 'invalid_payload',
      });
      expect(parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length >= body.length)).toEqual([]);
    }
    parse.mockRestore();
    // At the limit it is accepted; the keys are stored as sent.
    const { result: accepted, slowestMs } = await slowestHealthzDuring(postEvent(app, setup, keys(MAX_JSON_VALUES - 2)));
    console.info(`${MAX_JSON_VALUES - 2} keys: ${accepted.status}; slowest /healthz meanwhile ${slowestMs.toFixed(1)} ms`);
    expect(accepted.status).toBe(200);
  });
});
