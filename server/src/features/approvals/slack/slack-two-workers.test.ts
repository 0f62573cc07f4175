import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { signIn } from '../../../../test/helpers/factories.ts';
import type { FakeSlack } from '../../../../test/helpers/fake-slack.ts';
import { jobsOfAction } from '../../../../test/helpers/jobs.ts';
import { useSlackApprovals } from '../../../../test/helpers/slack-approvals.ts';
import { startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';

const slackApprovals = useSlackApprovals();
let app: TestApp;
let slack: FakeSlack;
beforeAll(() => ({ app, slack } = slackApprovals.started));

const notifyJobs = (actionId: string) => jobsOfAction(app.container.db, 'approvals.notify', actionId);
const updateJobs = (actionId: string) => jobsOfAction(app.container.db, 'approvals.slack-update', actionId);

/** A second worker process on the same database, finding jobs by its poll. */
async function secondWorker() {
  const second = await startTestApp(
    { SLACK_API_URL: slack.url, MCP_ALLOW_PRIVATE_NETWORKS: 'true', JOB_POLL_SECONDS: '0.2' },
    { shareDatabaseWith: app },
  );
  onTestFinished(second.close);
  return second;
}

describe('approval messages in Slack with two worker processes', () => {
  it('a second job of the action waits for the first one posting, then posts nothing twice', async () => {
    const posting = slack.holdNextPost();
    const waiting = await slackApprovals.waitingRefund();
    // The first process's job posted the message; Slack holds its answer, so its call is still `sending`.
    await posting.held;
    // A second worker process, and a second job of the action (as a new wait would enqueue): without
    // one job at a time it took the post in flight for one cut off, and posted the message again.
    await secondWorker();
    await app.container.jobs.enqueue('approvals.notify', { actionId: waiting.actionId });
    // Put off: completed unrun, with a new job of the action to run once the first is done.
    await eventually('the second job put off', async () => {
      const jobs = await notifyJobs(waiting.actionId);
      return jobs[1]?.state === 'completed' && jobs[2]?.state === 'created' ? true : undefined;
    });

    posting.release();
    await eventually('every job done', async () => {
      const jobs = await notifyJobs(waiting.actionId);
      return (jobs.length === 3 && jobs.every((job) => job.state === 'completed')) || undefined;
    });
    const { org, token } = waiting.setup.tenant;
    const ledger = await (await app.request('GET', `/orgs/${org.slug}/ledger/${waiting.actionId}`, { token })).json();
    expect(ledger.execution.toolCalls[0].notifications).toEqual([expect.objectContaining({ channel: 'slack', status: 'sent' })]);
    const messages = [...slack.messages.values()].filter((message) => JSON.stringify(message.blocks).includes(waiting.actionId));
    expect(messages).toHaveLength(1);
    const posts = slack.callsOf('chat.postMessage').filter((post) => JSON.stringify(post.args).includes(waiting.actionId));
    expect(posts).toHaveLength(1);
  }, 60_000);

  it('an update on its way never overwrites a newer decision: the next update waits for it, and shows the decision', async () => {
    const waiting = await slackApprovals.waitingRefund();
    const { second: approver } = await slackApprovals.twoApprovals(waiting);
    const message = await slackApprovals.messageOf(waiting.actionId);
    await eventually('the post done', async () => (await notifyJobs(waiting.actionId))[0]?.state === 'completed' || undefined);
    // The first approval's update read the record (one approval of two, the buttons still there), and
    // its call is slow on its way to Slack.
    const updating = slack.holdNextUpdate();
    await slackApprovals.click(waiting, waiting.adminSlackId, 'approve', slackApprovals.buttonsOf(message)[0].value);
    await updating.held;
    await secondWorker();
    // The second approval decides the call; its update reads the record while the first is on its way.
    // Without one update of the action at a time, it landed first and the first one then overwrote it:
    // the message asked for the second approval again, with its buttons.
    const { org } = waiting.setup.tenant;
    const approved = await app.request(
      'POST',
      `/orgs/${org.slug}/actions/${waiting.actionId}/tool-calls/${waiting.toolCallId}/approve`,
      { token: await signIn(app, approver), body: {} },
    );
    expect(await approved.json()).toMatchObject({ status: 'approved' });
    await eventually('the second update done or put off', async () => {
      const jobs = await updateJobs(waiting.actionId);
      return jobs[1]?.state === 'completed' || undefined;
    });

    updating.release();
    await eventually('every update done', async () => {
      const jobs = await updateJobs(waiting.actionId);
      return (jobs.length >= 2 && jobs.every((job) => job.state === 'completed')) || undefined;
    });
    expect(slackApprovals.buttonsOf(message)).toEqual([]);
    expect(JSON.stringify(message.blocks)).toContain(`Approved by ${approver.email} through the API`);
  });
});
