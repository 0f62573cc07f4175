import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

interface StreamEvent {
  id?: string;
  event: string;
  data: any;
}

/** Opens an org's event stream as a browser's EventSource would, collecting its events. */
async function openStream(org: string, token: string, lastEventId?: string, server: TestApp = app) {
  const controller = new AbortController();
  const response = await fetch(`${server.baseUrl}/orgs/${org}/events`, {
    headers: {
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    },
    signal: controller.signal,
  });
  const events: StreamEvent[] = [];
  const reading = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = Object.fromEntries(
            block
              .split('\n')
              .filter((line) => line && !line.startsWith(':'))
              .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart()]),
          );
          if (fields.event || fields.data)
            events.push({ id: fields.id, event: fields.event ?? 'message', data: JSON.parse(fields.data ?? 'null') });
          end = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    response,
    events,
    async waitFor(predicate: (event: StreamEvent) => boolean, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const found = events.find(predicate);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`no matching event; got ${JSON.stringify(events)}`);
    },
    async close() {
      controller.abort();
      await reading;
    },
  };
}

describe('GET /orgs/:org/events', () => {
  it("streams the org's ledger changes once committed, and never another org's", async () => {
    const setup = await setupWebhook(app);
    const other = await setupWebhook(app);
    const stream = await openStream(setup.tenant.org.slug, setup.tenant.token);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);

    const foreign = await (await postEvent(app, other, { eventType: 'x', externalId: 'theirs', data: {} })).json();
    const mine = await (await postEvent(app, setup, { eventType: 'x', externalId: 'mine', data: {} })).json();
    const change = await stream.waitFor((event) => event.event === 'ledger' && event.data.ids?.includes(mine.actionId));
    expect(change.id).toMatch(/^[a-z0-9]+-\d+$/);
    // The action runs to its end (no model configured: it fails), announced too.
    await stream.waitFor(
      (event) => event.event === 'ledger' && event.data.ids?.includes(mine.actionId) && event.id !== change.id,
    );
    expect(stream.events.some((event) => JSON.stringify(event.data).includes(foreign.actionId))).toBe(false);
    await stream.close();
  });

  it('replays what a reconnecting stream missed (Last-Event-ID), and says resync for an id it cannot resume', async () => {
    const setup = await setupWebhook(app);
    // A second stream stays open throughout: it tells when the change the first one misses has happened.
    const witness = await openStream(setup.tenant.org.slug, setup.tenant.token);
    const first = await openStream(setup.tenant.org.slug, setup.tenant.token);
    const a = await (await postEvent(app, setup, { eventType: 'x', externalId: 'a', data: {} })).json();
    const seen = await first.waitFor((event) => event.event === 'ledger' && event.data.ids?.includes(a.actionId));
    await first.close();

    const b = await (await postEvent(app, setup, { eventType: 'x', externalId: 'b', data: {} })).json();
    await witness.waitFor((event) => event.event === 'ledger' && event.data.ids?.includes(b.actionId));
    await witness.close();

    const resumed = await openStream(setup.tenant.org.slug, setup.tenant.token, seen.id);
    await resumed.waitFor((event) => event.event === 'ledger' && event.data.ids?.includes(b.actionId));
    await resumed.close();

    const unknown = await openStream(setup.tenant.org.slug, setup.tenant.token, 'someone-else-12');
    await unknown.waitFor((event) => event.event === 'resync');
    await unknown.close();
  });

  it('has the database announce changes only while a stream is open somewhere (the first stream is told to resync)', async () => {
    const watched = async () =>
      (
        await sql<{ n: number }>`select count(*)::int as n from org_event_streams where expires_at > now()`.execute(
          app.container.db,
        )
      ).rows[0]!.n;
    await sql`delete from org_event_streams`.execute(app.container.db);
    expect(await watched()).toBe(0);
    // A second process on the same database, whose first stream this is.
    const second = await startTestApp({}, { shareDatabaseWith: app, workers: false });
    try {
      const setup = await setupWebhook(app);
      const stream = await openStream(setup.tenant.org.slug, setup.tenant.token, undefined, second);
      // Announcements were off until this stream: what it shows must be refetched.
      await stream.waitFor((event) => event.event === 'resync');
      expect(await watched()).toBe(1);
      // From now on a change made by the other process reaches it.
      const posted = await (await postEvent(app, setup, { eventType: 'x', externalId: 'watched', data: {} })).json();
      await stream.waitFor((event) => event.event === 'ledger' && event.data.ids?.includes(posted.actionId));
      await stream.close();
    } finally {
      await second.close();
    }
  });

  it("is for the org's admins: 401 without a session, 404 for a non-member, 403 for a Guest", async () => {
    const tenant = await createTenant(app);
    const outsider = await createTenant(app);
    const guest = await createUser(app, { role: 'Guest', org: tenant.org.slug });
    const status = async (token?: string) =>
      (
        await fetch(`${app.baseUrl}/orgs/${tenant.org.slug}/events`, {
          headers: { accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        })
      ).status;
    expect(await status()).toBe(401);
    // A client that refuses event streams gets a 406 in the error model, as does one with q=0.
    for (const accept of ['application/json', 'text/event-stream;q=0']) {
      const refused = await fetch(`${app.baseUrl}/orgs/${tenant.org.slug}/events`, {
        headers: { accept, authorization: `Bearer ${tenant.token}` },
      });
      expect(refused.status).toBe(406);
      expect(await refused.json()).toEqual({ error: expect.stringContaining('text/event-stream'), code: 'not_acceptable' });
    }
    expect(await status(outsider.token)).toBe(404);
    expect(await status(await signIn(app, guest))).toBe(403);
  });
});
