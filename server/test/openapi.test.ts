import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../src/lib/errors.ts';
import { setupWebhook } from './helpers/webhooks.ts';
import { startTestApp, type TestApp } from './helpers/test-app.ts';

let app: TestApp;
let spec: any;
beforeAll(async () => {
  app = await startTestApp({}, { workers: false });
  spec = await (await app.request('GET', '/openapi.json')).json();
});
afterAll(async () => app?.close());

const operations = () =>
  Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

describe('the OpenAPI document', () => {
  it("passes Redocly's recommended rules with no error", async () => {
    const problems = await lintFromString({
      source: JSON.stringify(spec),
      absoluteRef: 'openapi.json',
      config: await createConfig({ extends: ['recommended'] }),
    });
    const errors = problems
      .filter((problem) => problem.severity === 'error')
      .map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`);
    expect(errors).toEqual([]);
  });

  it('names every operation (unique operationIds, for typed clients) and marks the public ones security: []', () => {
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const path of ['/healthz', '/auth/login/credentials', '/webhooks/actions/{org}/{webhookIdentifier}']) {
      const [operation] = Object.values(spec.paths[path]) as any[];
      expect(operation.security, path).toEqual([]);
    }
    // Error bodies: the closed set of codes, so that a client can switch on them.
    expect(spec.components.schemas.Error.properties.code.enum).toEqual(Object.keys(ERROR_STATUS));
    expect(spec.paths['/orgs/{org}/documents/{documentId}'].get.responses['200'].content).toEqual({
      'application/pdf': { schema: { type: 'string', format: 'binary' } },
    });
  });
});

describe('optional bodies: one rule', () => {
  it('an operation whose body is optional accepts none, with or without a JSON content type, and the document says it is optional', async () => {
    const setup = await setupWebhook(app);
    const { token, org } = setup.tenant;
    const sendTest = `/orgs/${org.slug}/webhooks/${setup.webhook.id}/test`;
    for (const headers of [{}, { 'content-type': 'application/json' }] as Record<string, string>[]) {
      const response = await app.request('POST', sendTest, { token, headers });
      expect({ headers, status: response.status }).toEqual({ headers, status: 200 });
      expect(await response.json()).toMatchObject({ mode: 'http', statusCode: 200 });
    }
    expect(spec.paths['/orgs/{org}/webhooks/{id}/test'].post.requestBody.required).toBe(false);
    expect(spec.paths['/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/approve'].post.requestBody.required).toBe(false);
    expect(spec.paths['/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/reject'].post.requestBody.required).toBe(false);

    // A required body left out is a validation error that says what was expected, not "invalid JSON".
    const missing = await app.request('POST', `/orgs/${org.slug}/agents`, {
      token,
      headers: { 'content-type': 'application/json' },
    });
    expect(missing.status).toBe(400);
    expect((await missing.json()).code).toBe('validation_failed');
    expect(spec.paths['/orgs/{org}/agents'].post.requestBody.required).toBe(true);
  });
});
