import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { type FakeMailProvider, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import { followSendEvent, setUpSendingOrg, withSendAgainPutOff } from '../../../test/helpers/send-email.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
// A poll that finds the job's next try come due.
useAppWithMailProvider({ JOB_POLL_SECONDS: '0.5' }, (started) => ({ app, model, provider } = started));

type SendingOrg = Awaited<ReturnType<typeof setUpSendingOrg>>;

/** The message once it is no longer `sending` (the job sent it, or gave up). */
const settledMessage = (org: SendingOrg) =>
  eventually(
    'the message sent again, or failed',
    async () => {
      const message = await org.onlyMessage();
      return message.status === 'sending' ? undefined : message;
    },
    30_000,
  );

/** The emails the provider sent to an address (a send again with the same idempotency key sends none). */
const sendsTo = (to: string) => provider.sent.filter((email) => email.to.includes(to));

/** How many POST /emails the provider was sent, in this file. */
const emailPosts = () => provider.requests.filter((request) => request.method === 'POST' && request.url === '/emails').length;

/** The job that sends the org's message again. */
async function sendAgainJob(messageId: string) {
  const { rows } = await sql<{ id: string; state: string; retryCount: number }>`
    select id, state, retry_count as "retryCount" from pgboss.job
     where name = 'email.send-again' and data->>'messageRowId' = ${messageId}`.execute(app.container.db);
  return rows;
}

/** Runs an event whose agent sends `send`: the provider sends the email, then answers 503 (the sender cannot know). */
async function sentButAnswered503(org: SendingOrg, send: { to: string; subject: string; body: string }) {
  const held = provider.holdNext('send');
  const run = org.run({ send });
  await held.held;
  held.releaseFailing(503);
  return run;
}

/** Runs `test` with the send-again jobs queued meanwhile put off: the test makes the job due (`runJobNow`). */
const withJobsPutOff = (test: () => Promise<void>) => withSendAgainPutOff(app.container.db, test);

/** An org whose agent sent one email that the provider refused with a 503 (nothing sent): the waiting message. */
async function refusedOnce(name: string) {
  model.script(followSendEvent);
  const org = await setUpSendingOrg(app, provider, {});
  const to = `${name}-${randomUUID().slice(0, 6)}@customer.test`;
  provider.failNextSends(1, 503);
  await org.run({ send: { to, subject: 'Later', body: 'Not at once.' } });
  return { org, to, waiting: await org.onlyMessage() };
}

/** Makes the message's job due now (as its queue's last attempt, with `asLast`), instead of when it was put off. */
async function runJobNow(messageId: string, { asLast = false } = {}) {
  const [job] = await sendAgainJob(messageId);
  await sql`update pgboss.job set start_after = now(),
    retry_count = case when ${asLast} then retry_limit else retry_count end where id = ${job!.id}`.execute(app.container.db);
}

const queuedNote = expect.stringContaining('sent again in the next minutes with the same idempotency key');

describe('sendEmail: a send the provider did not take at once', () => {
  it('is sent again by a job, as it was (its PDF, its idempotency key); the model is told it is queued, not to send it again', async () => {
    model.script(followSendEvent);
    const org = await setUpSendingOrg(app, provider, {});
    const to = `kim-${randomUUID().slice(0, 6)}@customer.test`;
    provider.failNextSends(1, 503);
    // The job's send is answered only once the waiting message has been read.
    const jobSend = provider.holdNext('send');
    const call = await org.run({
      send: { to, subject: 'Your invoice', body: 'Attached.' },
      document: { title: 'Invoice 8', content: '# Invoice 8' },
    });
    expect(call).toMatchObject({
      status: 'completed',
      output: { type: 'json', value: { sent: false, queued: true, to: [to], subject: 'Your invoice', note: queuedNote } },
    });
    expect(call.output.value.note).toContain('temporary failure');
    const waiting = await org.onlyMessage();
    expect(waiting).toMatchObject({ status: 'sending', statusDetail: expect.stringContaining('did not take it at once') });

    await jobSend.held;
    jobSend.release();
    const message = await settledMessage(org);
    const [email] = sendsTo(to);
    expect(sendsTo(to)).toHaveLength(1);
    expect(message).toMatchObject({ status: 'sent', statusDetail: null, providerEmailId: email!.id });
    expect(email!.idempotencyKey).toBe(`${message.actionId}/${call.toolCallId}`);
    expect(email!.attachments).toEqual([expect.objectContaining({ filename: 'Invoice 8.pdf', content_type: 'application/pdf' })]);
    expect(Buffer.from(email!.attachments![0]!.content, 'base64').subarray(0, 5).toString()).toBe('%PDF-');
    // The job's handler settles the message; the queue then marks the job completed.
    await eventually('the job completed', async () =>
      (await sendAgainJob(message.id))[0]?.state === 'completed' ? true : undefined,
    );
    expect(await sendAgainJob(message.id)).toEqual([expect.objectContaining({ retryCount: 0 })]);
  }, 60_000);

  it('is not sent twice when the provider sent it but its answer was a 5xx: the retry gets the same email', async () => {
    model.script(followSendEvent);
    const org = await setUpSendingOrg(app, provider, {});
    const to = `lee-${randomUUID().slice(0, 6)}@customer.test`;
    const postsBefore = emailPosts();
    const call = await sentButAnswered503(org, { to, subject: 'Once', body: 'Only once.' });
    expect(call.output.value).toMatchObject({ sent: false, queued: true });
    const message = await settledMessage(org);
    // The first send, and the job's with the same key, which the provider answers with the same email.
    expect(emailPosts() - postsBefore).toBe(2);
    expect(sendsTo(to)).toHaveLength(1);
    expect(message).toMatchObject({ status: 'sent', providerEmailId: sendsTo(to)[0]!.id });
  }, 60_000);

  it(
    "is settled by the provider's email.sent notification before the job's try: the job sends nothing",
    () =>
      withJobsPutOff(async () => {
        model.script(followSendEvent);
        const org = await setUpSendingOrg(app, provider, {});
        const to = `mia-${randomUUID().slice(0, 6)}@customer.test`;
        const call = await sentButAnswered503(org, { to, subject: 'Told', body: 'By the notification.' });
        expect(call.output.value).toMatchObject({ queued: true });
        expect(await org.onlyMessage()).toMatchObject({ status: 'sending', statusDetail: expect.any(String) });
        const [email] = sendsTo(to);
        expect((await org.notify(provider.sentEvent(email!.id, 'email.sent'))).status).toBe(200);
        const message = await settledMessage(org);
        expect(message).toMatchObject({ status: 'sent', statusDetail: null, providerEmailId: email!.id });
        const postsBefore = emailPosts();
        await runJobNow(message.id);
        await eventually('the job done', async () =>
          (await sendAgainJob(message.id))[0]?.state === 'completed' ? true : undefined,
        );
        expect(emailPosts()).toBe(postsBefore);
      }),
    60_000,
  );

  it(
    "on the job's last attempt, one the provider still does not take ends failed, with why",
    () =>
      withJobsPutOff(async () => {
        const { org, to, waiting } = await refusedOnce('max');
        // Its first run is its last (as after eight retries), and due now; the provider refuses that send too.
        provider.failNextSends(1, 503);
        await runJobNow(waiting.id, { asLast: true });
        const message = await settledMessage(org);
        expect(message).toMatchObject({ status: 'failed', statusDetail: 'The provider refused it: temporary failure' });
        expect(sendsTo(to)).toEqual([]);
        // The message is failed by the job's handler, which the queue then marks completed.
        await eventually('the job completed', async () =>
          (await sendAgainJob(waiting.id))[0]?.state === 'completed' ? true : undefined,
        );
        expect(await sendAgainJob(waiting.id)).toHaveLength(1);
      }),
    60_000,
  );

  it('ends failed at once when its job cannot be queued: the model is told it may have reached the provider', async () => {
    // The queue refuses this job (as a database failing at that moment would); nothing would send it again.
    await sql`create function refuse_send_again() returns trigger language plpgsql as $$
      begin raise exception 'the queue is unavailable'; end $$`.execute(app.container.db);
    await sql`create trigger refuse_send_again before insert on pgboss.job for each row
      when (new.name = 'email.send-again') execute function refuse_send_again()`.execute(app.container.db);
    try {
      model.script(followSendEvent);
      const org = await setUpSendingOrg(app, provider, {});
      const to = `ora-${randomUUID().slice(0, 6)}@customer.test`;
      provider.failNextSends(1, 503);
      const call = await org.run({ send: { to, subject: 'Unqueued', body: 'Nobody sends it again.' } });
      const detail =
        'Not sent: the provider did not take it at once (temporary failure), and it could not be queued to be sent again';
      expect(call).toMatchObject({ status: 'failed', output: { type: 'error-text', value: expect.stringContaining(detail) } });
      expect(call.output.value).toContain('the provider may have received it');
      expect(call.output.value).not.toContain('the queue is unavailable');
      const message = await org.onlyMessage();
      expect(message).toMatchObject({ status: 'failed', statusDetail: detail });
      expect(await sendAgainJob(message.id)).toEqual([]);
    } finally {
      await sql`drop function refuse_send_again cascade`.execute(app.container.db);
    }
  }, 60_000);

  it(
    'is not sent once the org has removed its integration meanwhile: it ends failed, with why',
    () =>
      withJobsPutOff(async () => {
        const { org, to, waiting } = await refusedOnce('ned');
        const removed = await app.request('DELETE', `/orgs/${org.auth.org}/email/integration`, { token: org.auth.token });
        expect(removed.status).toBe(204);
        await runJobNow(waiting.id);
        const message = await settledMessage(org);
        expect(message).toMatchObject({
          status: 'failed',
          statusDetail: 'Not sent: the email integration was removed meanwhile',
        });
        expect(sendsTo(to)).toEqual([]);
      }),
    60_000,
  );
});
