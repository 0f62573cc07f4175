import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeMailProvider, setUpEmailOrg } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { expectCommitWithoutFlush } from '../../../test/helpers/flushless.ts';
import { postSignedNotification, startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { POLL_FOR_DUE_WORK, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { notificationsRepo } from './notifications.repo.ts';

let app: TestApp;
let provider: FakeMailProvider;
beforeAll(async () => {
  provider = await startFakeMailProvider();
  app = await startTestApp({
    MAIL_API_URL: provider.url,
    MAIL_API_RETRIES: '0',
    EMAIL_WEBHOOK_MAX_BYTES: '20000',
    ...POLL_FOR_DUE_WORK, // retries after a backoff
  });
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
});

/** A received email at the org's inbox and its notification. */
async function inboundTo(org: Awaited<ReturnType<typeof setUpEmailOrg>>, subject = 'Hello') {
  const received = provider.receive({ from: 'dave@customer.test', to: [org.inbox.emailAddress], subject, text: 'Hi' });
  return { received, event: provider.receivedEvent(received.id) };
}

const threadsOf = async (org: Awaited<ReturnType<typeof setUpEmailOrg>>) =>
  (await (await org.api('GET', '/email/threads')).json()).threads;

describe('POST /webhooks/mail', () => {
  it('refuses what is not signed by the org: missing, stale, future, wrong or another org’s signature (401), and stores nothing', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const other = await setUpEmailOrg(app, provider, { autoRespond: false });
    const { event } = await inboundTo(org);
    const unsigned = await fetch(org.webhook.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
    });
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toMatchObject({ code: 'signature_missing' });
    const now = Math.floor(Date.now() / 1000);
    for (const timestamp of [now - 301 - 5, now + 301 + 5]) {
      const stale = await org.notify(event, { timestamp });
      expect(stale.status).toBe(401);
      expect(await stale.json()).toMatchObject({ code: 'timestamp_out_of_tolerance' });
    }
    const wrong = await org.notify(event, { signature: `v1,${Buffer.alloc(32).toString('base64')}` });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ code: 'signature_invalid' });
    // Signed with another org's secret: it cannot write into this org's inbox.
    const forged = await postSignedNotification(other.webhook, event);
    expect(forged.status).toBe(401);
    // Signed, then altered on the way.
    const altered = await org.notify(event, {
      signedBody: JSON.stringify(event),
      body: JSON.stringify({ ...event, data: { ...event.data, subject: 'Changed' } }),
    });
    expect(altered.status).toBe(401);
    expect(await threadsOf(org)).toEqual([]);
  });

  it('accepts the webhook-* header names and a rotated secret’s two signatures', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const { event } = await inboundTo(org, 'Rotated');
    const accepted = await org.notify(event, {
      headerPrefix: 'webhook',
      extraSignatures: [`v1,${Buffer.alloc(32, 1).toString('base64')}`, 'v2,ignored'],
    });
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ status: 'accepted' });
    await eventually('the email stored', async () => ((await threadsOf(org)).length === 1 ? true : undefined));
  });

  it('answers malformed input 400 and an oversized body 413, never 500', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const { event } = await inboundTo(org);
    const notJson = await org.notify(undefined, { body: '{"type": "email.received", ' });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ code: 'invalid_json' });
    const badShape = await org.notify({ ...event, data: { ...event.data, email_id: 42 } });
    expect(badShape.status).toBe(400);
    const noEmailId = await org.notify({ ...event, data: { ...event.data, email_id: '' } });
    expect(noEmailId.status).toBe(400);
    expect(await noEmailId.json()).toMatchObject({ code: 'invalid_payload' });
    const nul = await org.notify({ ...event, data: { ...event.data, subject: 'a\u0000b' } });
    expect(nul.status).toBe(400);
    const surrogate = await org.notify(undefined, { body: JSON.stringify(event).replace('"Hello"', '"\\ud800"') });
    expect(surrogate.status).toBe(400);
    expect(await surrogate.json()).toMatchObject({ code: 'invalid_payload' });
    const empty = await org.notify(undefined, { body: '' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ code: 'invalid_json' });
    const deep = await org.notify({
      ...event,
      data: { ...event.data, extra: JSON.parse(`${'['.repeat(100)}${']'.repeat(100)}`) },
    });
    expect(deep.status).toBe(400);
    const huge = await org.notify({ ...event, data: { ...event.data, subject: 'x'.repeat(30_000) } });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ code: 'payload_too_large' });
    const notAnObject = await org.notify(undefined, { body: '"just a string"' });
    expect(notAnObject.status).toBe(200);
    expect(await notAnObject.json()).toMatchObject({ status: 'ignored' });
  });

  it('acknowledges a notification for no inbox or no email of ours as ignored, with the reason', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const stray = provider.receive({ from: 'eve@customer.test', to: ['nobody@unknown.example'], subject: 'Stray', text: '?' });
    const ignored = await org.notify(provider.receivedEvent(stray.id));
    expect(ignored.status).toBe(200);
    expect(await ignored.json()).toMatchObject({ status: 'ignored', reason: 'no inbox for any recipient of the email' });
    const unknownSent = await org.notify({
      type: 'email.delivered',
      created_at: new Date().toISOString(),
      data: { email_id: crypto.randomUUID(), to: ['x@y.test'] },
    });
    expect(await unknownSent.json()).toMatchObject({ status: 'ignored', reason: 'no email we sent has this email_id' });
    for (const tags of [[null, 5, { name: 'ap_org' }], { ap_org: 42 }, { ap_org: 'not-a-uuid' }, 'tags']) {
      const odd = await org.notify({ type: 'email.bounced', data: { email_id: crypto.randomUUID(), tags } });
      expect(odd.status).toBe(200);
      expect(await odd.json()).toMatchObject({ status: 'ignored' });
    }
  });

  it('keeps each org’s email to itself: threads, messages and attachments of another org are 404', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const other = await setUpEmailOrg(app, provider, { autoRespond: false });
    const received = provider.receive({
      from: 'frank@customer.test',
      to: [org.inbox.emailAddress],
      subject: 'Private',
      text: 'Secret',
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('secret') }],
    });
    await org.notify(provider.receivedEvent(received.id));
    const [thread] = await eventually('the email stored', async () =>
      (await threadsOf(org)).length === 1 ? threadsOf(org) : undefined,
    );
    const { messages } = await (await org.api('GET', `/email/threads/${thread.id}`)).json();
    const attachmentId = messages[0].attachments[0].id;
    expect(await threadsOf(other)).toEqual([]);
    expect((await other.api('GET', `/email/threads/${thread.id}`)).status).toBe(404);
    expect((await other.api('GET', `/email/attachments/${attachmentId}`)).status).toBe(404);
    expect((await app.request('GET', `/orgs/${org.org.slug}/email/threads`, { token: other.token })).status).toBe(404);
    expect((await app.request('GET', `/orgs/${org.org.slug}/email/threads`)).status).toBe(401);
    expect((await (await other.api('GET', `/email/threads?inboxId=${org.inbox.id}`)).json()).threads).toEqual([]);
    for (const path of [
      '/email/threads/not-a-uuid',
      '/email/attachments/not-a-uuid',
      '/email/threads?inboxId=x',
      `/email/threads?cursor=${'z'.repeat(150)}`,
    ]) {
      const bad = await other.api('GET', path);
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ code: 'validation_failed', error: expect.any(String) });
    }
    expect((await other.api('DELETE', '/email/suppressions/a%00b@x.test')).status).toBe(400);
    const download = await org.api('GET', `/email/attachments/${attachmentId}`);
    expect(download.headers.get('content-security-policy')).toContain('sandbox');
    expect(await download.text()).toBe('secret');
  });

  it('retries a fetch that failed (seconds later) and records an attachment that could not be downloaded on its message', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const received = provider.receive({
      from: 'gina@customer.test',
      to: [org.inbox.emailAddress],
      subject: 'Flaky',
      text: 'Hi',
      attachments: [{ filename: 'gone.txt', contentType: 'text/plain', content: Buffer.from('lost') }],
    });
    provider.failNextRequests(1, 503);
    provider.failNextDownloads(1);
    expect((await org.notify(provider.receivedEvent(received.id))).status).toBe(200);
    const [thread] = await eventually('the email stored after a retry', async () =>
      (await threadsOf(org)).length === 1 ? threadsOf(org) : undefined,
    );
    const { messages } = await (await org.api('GET', `/email/threads/${thread.id}`)).json();
    expect(messages[0].attachments).toEqual([
      expect.objectContaining({
        filename: 'gone.txt',
        status: 'failed',
        error: 'Not downloaded: The attachment download answered 410',
      }),
    ]);
  });

  it("waits out a failed attempt's backoff, and fails a notification for good after its last attempt", async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const { event } = await inboundTo(org, 'Vanished');
    // An email the provider does not know: every fetch answers 404.
    event.data.email_id = randomUUID();
    const { notificationId } = await (await org.notify(event)).json();
    const row = () =>
      app.container.db.selectFrom('emailNotifications').selectAll().where('id', '=', notificationId).executeTakeFirstOrThrow();
    const failed = await eventually('the first attempt failed', async () => ((await row()).lastError ? row() : undefined));
    expect(failed).toMatchObject({ status: 'received', attempts: 1, leaseExpiresAt: null });
    expect(failed.lastError).toBe('Email not found');
    // Retried 2 s after the failure, not at once (the backoff doubles from there).
    expect(failed.retryAt!.getTime() - failed.receivedAt.getTime()).toBeGreaterThanOrEqual(1_990);

    // As if ten attempts had failed (their backoff would take 34 minutes): the next is the last.
    await app.container.db
      .updateTable('emailNotifications')
      .set({ attempts: 10, retryAt: new Date() })
      .where('id', '=', notificationId)
      .execute();
    const final = await eventually('the notification failed for good', async () =>
      (await row()).status === 'failed' ? row() : undefined,
    );
    expect(final).toMatchObject({ attempts: 11, reason: 'gave up after 11 attempts', leaseExpiresAt: null, retryAt: null });
    expect(final.processedAt).not.toBeNull();
  });

  it('ignores a stored notification whose org removed its email integration before a worker took it', async () => {
    // Acknowledged by a process that runs no workers; the integration goes; then a worker comes.
    const serving = await startTestApp({ MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0' }, { workers: false });
    try {
      const org = await setUpEmailOrg(serving, provider, { autoRespond: false });
      const { event } = await inboundTo(org, 'Too late');
      const acknowledged = await (await org.notify(event)).json();
      expect(acknowledged.status).toBe('accepted');
      // Stored for the workers: a process that runs none shows it waiting.
      expect(await (await serving.request('GET', '/metrics')).text()).toMatch(/email_notifications_waiting\{state="ready"\} 1/);
      expect((await org.api('DELETE', '/email/integration')).status).toBe(204);
      const working = await startTestApp({ MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0' }, { shareDatabaseWith: serving });
      try {
        const processed = await eventually('the notification processed', async () => {
          const row = await working.container.db
            .selectFrom('emailNotifications')
            .selectAll()
            .where('id', '=', acknowledged.notificationId)
            .executeTakeFirstOrThrow();
          return row.status === 'received' ? undefined : row;
        });
        expect(processed).toMatchObject({ status: 'ignored', reason: 'the email integration was removed', attempts: 1 });
        expect(await threadsOf(org)).toEqual([]);
      } finally {
        await working.close();
      }
    } finally {
      await serving.close();
    }
  });

  it("is taken by a worker's claim, which commits without waiting for the flush in its own transaction only", async () => {
    const serving = await startTestApp({ MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0' }, { workers: false });
    try {
      const org = await setUpEmailOrg(serving, provider, { autoRespond: false });
      const acknowledged = await (await org.notify((await inboundTo(org, 'Claimed')).event)).json();
      const claimed = await expectCommitWithoutFlush(serving.container.db, (trx) =>
        notificationsRepo.claimReady(trx, 10, 60_000),
      );
      expect(claimed.map((row) => [row.id, row.attempts])).toEqual([[acknowledged.notificationId, 1]]);
    } finally {
      await serving.close();
    }
  });

  it('lets no other org change the suppression list', async () => {
    const org = await setUpEmailOrg(app, provider, { autoRespond: false });
    const other = await setUpEmailOrg(app, provider, { autoRespond: false });
    await app.container.db
      .insertInto('emailSuppressions')
      .values({ orgId: org.org.id, address: 'held@customer.test', reason: 'bounced', detail: null, messageId: null })
      .execute();
    expect((await other.api('DELETE', '/email/suppressions/held@customer.test')).status).toBe(404);
    expect(
      (await app.request('DELETE', `/orgs/${org.org.slug}/email/suppressions/held@customer.test`, { token: other.token })).status,
    ).toBe(404);
    expect((await (await org.api('GET', '/email/suppressions')).json()).suppressions).toHaveLength(1);
  });
});
