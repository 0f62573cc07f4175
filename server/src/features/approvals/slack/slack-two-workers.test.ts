import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../../../test/helpers/eventually.ts';
import type { FakeSlack } from '../../../../test/helpers/fake-slack.ts';
import { jobsOfAction } from '../../../../test/helpers/jobs.ts';
import { useSlackApprovals } from '../../../../test/helpers/slack-approvals.ts';
import { startTestApp, type TestApp } from '../../../../test/helpers/test-app.ts';

const slackApprovals = useSlackApprovals();
let app: TestApp;
let slack: FakeSlack;
beforeAll(() => ({ app, slack } = slackApprovals.started));

const notifyJobs = (actionId: string) => jobsOfAction(app.container.db, 'approvals.notify', actionId);

describe('approval messages in Slack with two worker processes', () => {
  it('a second job of the action waits for the first one posting, then posts nothing twice', async () => {
    const posting = slack.holdNextPost();
    const waiting = await slackApprovals.waitingRefund();
    // The first process's job posted the message; Slack holds its answer, so its call is still `sending`.
    await posting.held;
    // A second worker process on the same database, finding jobs by its poll, and a second job of the
    // action (as a new wait would enqueue): without one job at a time it took the post in flight for
    // one cut off, and posted the message again.
    const second = await startTestApp(
      { SLACK_API_URL: slack.url, MCP_ALLOW_PRIVATE_NETWORKS: 'true', JOB_POLL_SECONDS: '0.2' },
      { shareDatabaseWith: app },
    );
    onTestFinished(second.close);
    await app.container.jobs.enqueue('approvals.notify', { actionId: waiting.actionId });
    // Put off: completed unrun, with a new job of the action to run after the retry delay.
    await eventually('the second job put off', async () => {
      const jobs = await notifyJobs(waiting.actionId);
      return jobs[1]?.state === 'completed' && jobs[2]?.state === 'created' ? true : undefined;
    });

    posting.release();
    await eventually(
      'every job done',
      async () => {
        const jobs = await notifyJobs(waiting.actionId);
        return (jobs.length === 3 && jobs.every((job) => job.state === 'completed')) || undefined;
      },
      25_000,
    );
    const { org, token } = waiting.setup.tenant;
    const ledger = await (await app.request('GET', `/orgs/${org.slug}/ledger/${waiting.actionId}`, { token })).json();
    expect(ledger.execution.toolCalls[0].notifications).toEqual([expect.objectContaining({ channel: 'slack', status: 'sent' })]);
    const messages = [...slack.messages.values()].filter((message) => JSON.stringify(message.blocks).includes(waiting.actionId));
    expect(messages).toHaveLength(1);
    const posts = slack.callsOf('chat.postMessage').filter((post) => JSON.stringify(post.args).includes(waiting.actionId));
    expect(posts).toHaveLength(1);
  }, 60_000);
});
