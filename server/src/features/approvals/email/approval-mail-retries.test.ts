import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loggerOptions } from '../../../lib/logger.ts';
import { waitForAction } from '../../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../../test/helpers/callbacks.ts';
import { type FakeMailProvider, setUpApprovalOrg } from '../../../../test/helpers/email.ts';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { startFakeMailProvider } from '../../../../test/helpers/fake-mail-provider.ts';
import { documentThenText, startFakeModel } from '../../../../test/helpers/fake-model.ts';
import { failElsewhere, jobsOfAction } from '../../../../test/helpers/jobs.ts';
import { captureLog } from '../../../../test/helpers/log-capture.ts';
import type { FakeModel } from '../../../../test/helpers/model-app.ts';
import { startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';
import type { WebhookSetup } from '../../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
const log = captureLog(loggerOptions('warn'));
const appEnv = () => ({
  ...model.env,
  MAIL_API_URL: provider.url,
  // One request per send, and no answer given up on while a test holds it.
  MAIL_API_RETRIES: '0',
  MAIL_API_TIMEOUT_SECONDS: '60',
  // pg-boss's shortest heartbeat (a touch every 5 s), and a poll that finds a retry come due.
  JOB_HEARTBEAT_SECONDS: '10',
  JOB_POLL_SECONDS: '0.5',
});
beforeAll(async () => {
  [model, provider] = await Promise.all([startFakeModel(), startFakeMailProvider()]);
  app = await startTestApp(appEnv(), { logger: log.logger });
});
afterAll(async () => {
  await app?.close();
  await Promise.all([model?.close(), provider?.close()]);
});

const notifyJobs = (actionId: string) => jobsOfAction(app.container.db, 'approvals.notify', actionId);
const emailSends = () => provider.requests.filter((request) => request.method === 'POST' && request.url === '/emails').length;
const emailsOf = (actionId: string) => provider.sent.filter((email) => email.text?.includes(actionId));

/** How many runs of approvals.notify ended in the first process, however they ended. */
async function notifyRunsEnded(): Promise<number> {
  const { values } = await app.container.metrics.jobDuration.get();
  const count = values.find((value) => value.metricName?.endsWith('_count') && value.labels.queue === 'approvals.notify');
  return count?.value ?? 0;
}

/** The notifications of the action's waiting call, once both approvers' are there and none is `sending`. */
const settledNotifications = (setup: WebhookSetup, actionId: string) =>
  eventually('the notifications settled', async () => {
    const action = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const { notifications } = action.execution.toolCalls[0];
    const sending = notifications.some((notification: { status: string }) => notification.status === 'sending');
    return notifications.length === 2 && !sending ? notifications : undefined;
  });

/** The statuses of the messages in the org's email threads. */
async function messageStatuses(org: { org: { slug: string }; token: string }): Promise<string[]> {
  const api = async (path: string) =>
    (await app.request('GET', `/orgs/${org.org.slug}/email${path}`, { token: org.token })).json();
  const { threads } = await api('/threads');
  const messages = await Promise.all(
    threads.map(async (thread: { id: string }) => (await api(`/threads/${thread.id}`)).messages),
  );
  return messages.flat().map((message: { status: string }) => message.status);
}

describe('approval emails that were not sent at the first try', () => {
  it("an email the provider did not take (503) is sent again by the job's retry, as it was; the other approver's goes at once", async () => {
    const { org, second, setup } = await setUpApprovalOrg(app, provider);
    const sendsBefore = emailSends();
    provider.failNextRequests(1, 503);
    model.script(documentThenText());
    const actionId = await runEvent(app, setup);
    await eventually(
      'the job retried and done',
      async () => {
        const [job] = await notifyJobs(actionId);
        return job?.state === 'completed' ? job : undefined;
      },
      30_000,
    );
    expect((await notifyJobs(actionId))[0]).toMatchObject({ retryCount: 1 });
    // Three sends: the refused one, the other approver's, and the refused one again (its idempotency key kept).
    expect(emailSends() - sendsBefore).toBe(3);
    const sent = emailsOf(actionId);
    expect(sent.map((email) => email.to).sort()).toEqual([[org.admin.email], [second.email]].sort());
    expect(new Set(sent.map((email) => email.idempotencyKey)).size).toBe(2);
    const notifications = await settledNotifications(setup, actionId);
    expect(notifications.map((notification: { status: string }) => notification.status)).toEqual(['sent', 'sent']);
    // The org's threads (its approval thread) hold the two emails, not a third.
    expect(await messageStatuses(org)).toEqual(['sent', 'sent']);
  }, 60_000);

  it('on the last attempt, an email the provider still does not take ends failed, with why', async () => {
    const { org, second, setup } = await setUpApprovalOrg(app, provider);
    provider.failNextRequests(1, 503);
    model.script(documentThenText());
    const actionId = await runEvent(app, setup);
    const [failed] = await eventually('the first attempt failed', async () => {
      const jobs = await notifyJobs(actionId);
      return jobs[0]?.state === 'retry' ? jobs : undefined;
    });
    // Its next run is its last (as after eight retries), and due now; the provider fails that send too.
    provider.failNextRequests(1, 503);
    await sql`update pgboss.job set retry_count = retry_limit - 1, start_after = now() where id = ${failed!.id}`.execute(
      app.container.db,
    );
    await eventually('the last attempt done', async () => {
      const [job] = await notifyJobs(actionId);
      return job?.state === 'completed' ? job : undefined;
    });
    // The approver whose email was refused both times is told it failed, and why; the other's went.
    const notifications = await settledNotifications(setup, actionId);
    const [failedOne, sentOne] = [...notifications].sort((a: { status: string }, b: { status: string }) =>
      a.status.localeCompare(b.status),
    );
    expect(failedOne).toMatchObject({ status: 'failed', reason: expect.stringContaining('temporary failure') });
    expect(sentOne).toMatchObject({ status: 'sent' });
    expect([failedOne.address, sentOne.address].sort()).toEqual([org.admin.email, second.email].sort());
  }, 60_000);
});

describe("the answer to an approver's reply", () => {
  it("an answer the provider did not take is sent again by the reply job's retry; the reply is read, and refused, once", async () => {
    const { org, setup } = await setUpApprovalOrg(app, provider);
    model.script(documentThenText());
    const actionId = await runEvent(app, setup);
    await settledNotifications(setup, actionId);
    const email = emailsOf(actionId).find((sent) => sent.to.includes(org.admin.email))!;
    // Someone else answers the approval email: they are told, in one answer, that only the approver decides.
    // The provider sends that answer, then answers 503.
    const answering = provider.holdNext('send');
    const stranger = await org.deliver({
      from: 'mallory@evil.test',
      to: [`agents@${org.domain}`],
      subject: `Re: ${email.subject}`,
      text: 'approve',
      headers: { 'Message-ID': `<${crypto.randomUUID()}@approver.test>`, 'In-Reply-To': email.messageId },
    });
    await answering.held;
    answering.releaseFailing(503);
    const answer = await eventually(
      'the answer sent',
      async () => {
        const [row] = await app.container.db
          .selectFrom('emailMessages')
          .select(['status', 'statusDetail'])
          .where('orgId', '=', org.org.id)
          .where('inReplyTo', '=', stranger.slice(1, -1))
          .execute();
        return row?.status === 'sent' ? row : undefined;
      },
      30_000,
    );
    expect(answer.statusDetail).toBeNull();
    expect(provider.sent.filter((sent) => sent.headers?.['In-Reply-To'] === stranger)).toHaveLength(1);
    const [replyJob] = (
      await sql<{ retryCount: number; state: string }>`
        select retry_count as "retryCount", state from pgboss.job where name = 'approvals.reply'
         and data->>'messageRowId' = (select id::text from email_messages where message_id = ${stranger.slice(1, -1)})`.execute(
        app.container.db,
      )
    ).rows;
    expect(replyJob).toMatchObject({ retryCount: 1 });
    const waiting = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect(waiting.execution.toolCalls[0].refusedAttempts).toEqual([
      expect.objectContaining({
        channel: 'email_reply',
        reason: "A reply from mallory@evil.test, not from the approver's address",
      }),
    ]);
  }, 60_000);
});

describe('approval emails when a notification job loses its claim', () => {
  it('the attempt that lost it sends no further approver an email, and its failed send overwrites nothing its retry recorded', async () => {
    const { org, second, setup } = await setUpApprovalOrg(app, provider);
    // The first approver's email is sent, and its answer held: the attempt waits on it.
    const sending = provider.holdNext('send');
    model.script(documentThenText());
    const actionId = await runEvent(app, setup);
    await sending.held;
    const [job] = await notifyJobs(actionId);
    const endedBefore = await notifyRunsEnded();

    // Another process fails the attempt (as pg-boss's monitor does past its expiry): its next heartbeat
    // finds the claim gone, and its retry runs in a second worker process (this one's slot is the
    // attempt's until it returns).
    const other = await startTestApp(appEnv(), { shareDatabaseWith: app });
    onTestFinished(other.close);
    await failElsewhere(app, 'approvals.notify', job!.id);
    await eventually('the claim found gone', () =>
      log.lines.some((line) => line.includes("a running job's claim is gone") && line.includes(job!.id)) ? true : undefined,
    );
    await eventually(
      'the retry done',
      async () => {
        const [retried] = await notifyJobs(actionId);
        return retried?.state === 'completed' && retried.retryCount === 1 ? true : undefined;
      },
      30_000,
    );
    const sendsBeforeRelease = emailSends();

    // The first attempt's send gets its answer: a 500 (the provider sent it, and then failed). Its email,
    // which the retry sent again and recorded sent, stays so; and it stops before the next approver's.
    sending.releaseFailing(500);
    await eventually('the first attempt ended', async () => ((await notifyRunsEnded()) === endedBefore + 1 ? true : undefined));
    expect(emailSends()).toBe(sendsBeforeRelease);
    const sent = emailsOf(actionId);
    expect(sent.map((email) => email.to).sort()).toEqual([[org.admin.email], [second.email]].sort());
    const notifications = await settledNotifications(setup, actionId);
    expect(notifications.map((notification: { status: string }) => notification.status)).toEqual(['sent', 'sent']);
    expect(await messageStatuses(org)).toEqual(['sent', 'sent']);
  }, 60_000);
});
