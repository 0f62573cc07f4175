import { describe, expect, it, onTestFinished } from 'vitest';
import { waitForAction } from '../../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../../test/helpers/callbacks.ts';
import { type FakeMailProvider, setUpApprovalOrg, useAppWithMailProvider } from '../../../../test/helpers/email.ts';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { documentThenText } from '../../../../test/helpers/fake-model.ts';
import { jobsOfAction } from '../../../../test/helpers/jobs.ts';
import type { FakeModel } from '../../../../test/helpers/model-app.ts';
import { startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider({}, (started) => ({ app, model, provider } = started));

const notifyJobs = (actionId: string) => jobsOfAction(app.container.db, 'approvals.notify', actionId);

describe('approval emails with two worker processes', () => {
  it('a second job of the action waits for the first one sending, then sends nothing twice', async () => {
    const { org, second, setup } = await setUpApprovalOrg(app, provider);
    // The first process's job sends the first approver's email; the provider holds its answer, so the
    // email is still `sending`.
    const sending = provider.holdNext('send');
    model.script(documentThenText());
    const actionId = await runEvent(app, setup);
    await sending.held;
    // A second worker process on the same database, finding jobs by its poll, and a second job of the
    // action (as a new wait would enqueue): without one job at a time it took the send in flight for one
    // cut off, and sent the email again.
    const other = await startTestApp(
      { MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0', JOB_POLL_SECONDS: '0.2' },
      { shareDatabaseWith: app },
    );
    onTestFinished(other.close);
    await app.container.jobs.enqueue('approvals.notify', { actionId });
    // Put off: completed unrun, with a new job of the action to run once the first is done.
    await eventually('the second job put off', async () => {
      const jobs = await notifyJobs(actionId);
      return jobs[1]?.state === 'completed' && jobs[2]?.state === 'created' ? true : undefined;
    });

    sending.release();
    await eventually('every job done', async () => {
      const jobs = await notifyJobs(actionId);
      return (jobs.length === 3 && jobs.every((job) => job.state === 'completed')) || undefined;
    });
    const sent = provider.sent.filter((email) => email.text?.includes(actionId));
    expect(sent.map((email) => email.to).sort()).toEqual([[org.admin.email], [second.email]].sort());
    const done = await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    expect(done.execution.toolCalls[0].notifications).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ address: org.admin.email, channel: 'email', status: 'sent' }),
        expect.objectContaining({ address: second.email, channel: 'email', status: 'sent' }),
      ]),
    );
  }, 60_000);
});
