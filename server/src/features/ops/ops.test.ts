import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { freePort } from '../../../test/helpers/http.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';
import { CALLBACK_EVENT_TYPES } from '../../db/schema.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

describe('operations endpoints', () => {
  it('GET /healthz and /readyz answer, /readyz with each dependency', async () => {
    expect(await (await app.request('GET', '/healthz')).json()).toEqual({ status: 'ok' });
    expect(await (await app.request('GET', '/readyz')).json()).toEqual({
      status: 'ready',
      checks: { database: 'ok', queue: 'ok' },
    });
  });

  it('GET /readyz names the dependency that fails, without its cause', async () => {
    // Redis on a port where nothing listens: the rate limits fall back to memory, readiness says so.
    const port = await freePort();
    const withRedis = await startTestApp(
      { RATE_LIMIT_REDIS_URL: `redis://127.0.0.1:${port}` },
      { shareDatabaseWith: app, workers: false },
    );
    try {
      const response = await withRedis.request('GET', '/readyz');
      expect(response.status).toBe(503);
      const body = await response.json();
      expect(body).toEqual({
        error: 'Not ready: redis failing',
        code: 'not_ready',
        details: { checks: { database: 'ok', redis: 'failing', queue: 'ok' }, draining: false },
      });
      expect(JSON.stringify(body)).not.toContain(String(port));
    } finally {
      await withRedis.close();
    }
  });

  it('GET /readyz fails once the process drains, so that a load balancer moves on', async () => {
    const draining = await startTestApp({}, { shareDatabaseWith: app, workers: false });
    try {
      draining.container.beginDraining();
      const response = await draining.request('GET', '/readyz');
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({
        code: 'not_ready',
        error: 'Not ready: the process is shutting down',
        details: { draining: true },
      });
    } finally {
      await draining.close();
    }
  });

  it('GET /metrics reports the backlog: jobs per queue and their age, actions waiting to run, callbacks pending, leases', async () => {
    // A job for later: deferred until then.
    await app.container.jobs.enqueue(
      'approvals.expire',
      { toolCallRowId: '00000000-0000-4000-8000-000000000000' },
      { startAfter: new Date(Date.now() + 3_600_000) },
    );
    // An action no worker runs: this process only serves HTTP.
    const serving = await startTestApp({}, { workers: false });
    try {
      await postEvent(serving, await setupWebhook(serving), { eventType: 'order.created' });
      const waiting = await (await serving.request('GET', '/metrics')).text();
      expect(waiting).toMatch(/action_runs_waiting\{state="queued"\} 1/);
      expect(waiting).toMatch(/action_runs_waiting\{state="approved"\} 0/);
      expect(waiting).toMatch(/action_runs_oldest_waiting_seconds \d/);
    } finally {
      await serving.close();
    }
    const text = await (await app.request('GET', '/metrics')).text();
    expect(text).toMatch(/job_queue_jobs\{queue="approvals.expire",state="deferred"\} [1-9]/);
    expect(text).toMatch(/job_queue_jobs\{queue="email.lookup-message-id",state="queued"\} 0/);
    expect(text).toMatch(/email_notifications_waiting\{state="ready"\} 0/);
    expect(text).toMatch(/email_notifications_oldest_waiting_seconds 0/);
    expect(text).toMatch(/job_queue_oldest_queued_seconds\{queue="approvals.expire"\} /);
    expect(text).toMatch(/callback_backlog\{state="due"\} 0/);
    expect(text).toMatch(/callback_oldest_due_seconds 0/);
    expect(text).toMatch(/leases\{kind="action_run",state="held"\} 0/);
    expect(text).toMatch(/leases\{kind="email_notification",state="lapsed"\} 0/);
  });

  it('GET /metrics counts requests by route and status', async () => {
    await app.request('GET', '/auth/me');
    const text = await (await app.request('GET', '/metrics')).text();
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/auth\/me",status="401"\} \d+/);
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toContain('jobs_processed_total');
    expect(text).toContain('webhook_ingest_batch_size_bucket');
  });

  it('GET /openapi.json documents the auth routes from their schemas, and /docs serves the reference', async () => {
    const spec = await (await app.request('GET', '/openapi.json')).json();
    expect(spec.openapi).toMatch(/^3\./);
    for (const path of [
      '/auth/login/credentials',
      '/auth/logout',
      '/auth/forgot-password',
      '/auth/reset-password',
      '/auth/external',
      '/auth/me',
      '/api/threads',
      '/auth/codehost/callback',
    ]) {
      expect(spec.paths[path], path).toBeDefined();
    }
    expect(spec.paths['/auth/login/credentials'].post.requestBody.content['application/json'].schema.required).toEqual([
      'email',
      'password',
    ]);
    // The callback payload is documented, one variant per event type.
    expect(spec.paths['/orgs/{org}/webhooks/{webhookId}/callbacks']).toBeDefined();
    const callbackEvent = JSON.stringify(spec.components.schemas.CallbackEvent);
    for (const type of CALLBACK_EVENT_TYPES) expect(callbackEvent).toContain(type);
    const docs = await app.request('GET', '/docs', { redirect: 'follow' });
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('<html');
  });

  it('sends the OWASP REST security headers on every response', async () => {
    for (const path of ['/healthz', '/auth/me', '/nope']) {
      const response = await app.request('GET', path);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('content-security-policy')).toBe("frame-ancestors 'none'");
    }
  });

  it('answers a plain GET / with where the console and the docs are', async () => {
    const response = await app.request('GET', '/');
    expect(response.status).toBe(200);
    const index = await response.json();
    expect(index).toEqual({
      service: 'Agent Platform',
      message: expect.stringContaining(
        `Open http://app.test in a browser for the console; the API's reference is at ${app.baseUrl}/docs`,
      ),
      console: 'http://app.test',
      docs: `${app.baseUrl}/docs`,
      openapi: `${app.baseUrl}/openapi.json`,
      health: `${app.baseUrl}/healthz`,
    });
  });

  it('answers unknown routes with the error shape', async () => {
    const response = await app.request('GET', '/nope');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: 'Route GET /nope not found', code: 'not_found' });
  });

  it('refuses a body of the wrong media type and one over the body limit', async () => {
    const text = await app.request('POST', '/auth/login/credentials', {
      body: 'email=a',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    expect((await text.json()).code).toBe('unsupported_media_type');
    const huge = await app.request('POST', '/auth/login/credentials', {
      body: JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(huge.status).toBe(413);
    expect((await huge.json()).code).toBe('payload_too_large');
  });
});
