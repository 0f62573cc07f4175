import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../src/lib/errors.ts';
import { createTenant } from './helpers/factories.ts';
import { startTestApp, type TestApp, type TestResponse } from './helpers/test-app.ts';

/**
 * Text no route may store or look up (NUL, an unpaired surrogate), nesting no reader survives, and
 * instants outside any row's range, sent to every route the OpenAPI document lists: each answer is
 * a 4xx with the API's error body. The routes come from the document, so a new route is covered
 * the day it is added.
 */
let app: TestApp;
let tenant: Awaited<ReturnType<typeof createTenant>>;
let operations: { method: string; path: string; operation: any }[];
let spec: any;
beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
  tenant = await createTenant(app);
  spec = await (await app.request('GET', '/openapi.json')).json();
  operations = Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  );
});
afterAll(async () => app?.close());

const BAD_TEXT = { nul: 'bad\u0000text', surrogate: 'bad\ud800text' } as const;
/** The same in a URL: NUL percent-encoded, and U+D800 as the bytes a careless encoder writes for it. */
const BAD_URL_TEXT: Record<keyof typeof BAD_TEXT, string> = { nul: 'bad%00text', surrogate: 'bad%ED%A0%80text' };
const ANY_ID = '00000000-0000-4000-8000-000000000000';
/** A JSON body (as text: no JSON.stringify survives it) with 5,000 nested arrays under `property`. */
const deeplyNested = (property: string) => `{${JSON.stringify(property)}:${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
const cursorAt = (instant: string) => Buffer.from(`${instant}|${ANY_ID}`).toString('base64url');
const EXTREME_INSTANTS = ['-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '0000-01-01T00:00:00.000Z'];

/** A path with its parameters filled: `bad` for the one named, a plausible value for the others. */
function fill(path: string, bad?: { name: string; value: string }): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === bad?.name ? bad.value : /org/i.test(name) ? tenant.org.slug : ANY_ID,
  );
}

function bodySchemaOf(operation: any): any {
  const schema = operation.requestBody?.content?.['application/json']?.schema;
  return schema?.$ref ? spec.components.schemas[schema.$ref.split('/').pop()] : schema;
}

/** What is wrong with an answer that should be a 4xx with the API's error body, or undefined. */
async function notOurClientError(what: string, response: TestResponse): Promise<string | undefined> {
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const ours = typeof body?.error === 'string' && Object.hasOwn(ERROR_STATUS, body?.code);
  return response.status >= 400 && response.status < 500 && ours
    ? undefined
    : `${what}: ${response.status} ${text.slice(0, 200)}`;
}

/** Sends each request and lists every answer that is not a 4xx with our body (one assertion, all culprits named). */
function collector() {
  const failures: string[] = [];
  let sent = 0;
  return {
    async check(what: string, response: Promise<TestResponse>) {
      sent++;
      const failure = await notOurClientError(what, await response);
      if (failure) failures.push(failure);
    },
    get sent() {
      return sent;
    },
    failures,
  };
}

describe('bad input on every route', () => {
  it('a NUL or an unpaired surrogate in any path parameter, query parameter or body field', async () => {
    const answers = collector();
    for (const { method, path, operation } of operations) {
      for (const kind of ['nul', 'surrogate'] as const) {
        const value = BAD_TEXT[kind];
        for (const parameter of operation.parameters ?? []) {
          const encoded = BAD_URL_TEXT[kind];
          // A query's invalid UTF-8 decodes to U+FFFD, which is text like any other: only its NUL is bad.
          const target =
            parameter.in === 'path'
              ? fill(path, { name: parameter.name, value: encoded })
              : parameter.in === 'query' && kind === 'nul'
                ? `${fill(path)}?${parameter.name}=${encoded}`
                : undefined;
          if (!target) continue;
          await answers.check(
            `${method} ${path} ${parameter.in} ${parameter.name} (${kind})`,
            app.request(method, target, { token: tenant.token }),
          );
        }
        const properties = Object.keys(bodySchemaOf(operation)?.properties ?? {});
        for (const property of properties) {
          await answers.check(
            `${method} ${path} body.${property} (${kind})`,
            app.request(method, fill(path), { token: tenant.token, body: { [property]: value } }),
          );
        }
        if (operation.requestBody) {
          await answers.check(
            `${method} ${path} body key (${kind})`,
            app.request(method, fill(path), { token: tenant.token, body: { [value]: 'x' } }),
          );
          await answers.check(
            `${method} ${path} deep body`,
            app.request(method, fill(path), { token: tenant.token, body: deeplyNested(properties[0] ?? 'data') }),
          );
        }
      }
    }
    expect(answers.failures).toEqual([]);
    expect(answers.sent).toBeGreaterThan(200);
  });

  it('cursors and instants outside 1970 to 9999, wherever a route takes one', async () => {
    const answers = collector();
    for (const { method, path, operation } of operations) {
      const takesCursor = (operation.parameters ?? []).some(
        (parameter: any) => parameter.in === 'query' && parameter.name === 'cursor',
      );
      const instantFields = Object.entries(bodySchemaOf(operation)?.properties ?? {})
        .filter(([, schema]: [string, any]) => schema.format === 'date-time')
        .map(([name]) => name);
      for (const instant of EXTREME_INSTANTS) {
        if (takesCursor) {
          await answers.check(
            `${method} ${path} cursor at ${instant}`,
            app.request(method, `${fill(path)}?cursor=${cursorAt(instant)}`, { token: tenant.token }),
          );
        }
        for (const field of instantFields) {
          await answers.check(
            `${method} ${path} body.${field} = ${instant}`,
            app.request(method, fill(path), { token: tenant.token, body: { [field]: instant } }),
          );
        }
      }
    }
    expect(answers.failures).toEqual([]);
    expect(answers.sent).toBeGreaterThan(10);
  });

  it('an OPTIONS request without a CORS preflight is answered 204 without a body; a URL longer than the server reads, with the API error body', async () => {
    for (const path of [`/webhooks/actions/${tenant.org.slug}/abc`, `/orgs/${tenant.org.slug}/agents`]) {
      const response = await app.request('OPTIONS', path);
      expect({ path, status: response.status, body: await response.text() }).toEqual({ path, status: 204, body: '' });
    }
    const answers = collector();
    await answers.check('a 20,000-character URL', app.request('GET', `/orgs/${'x'.repeat(20_000)}`));
    expect(answers.failures).toEqual([]);
  });
});
