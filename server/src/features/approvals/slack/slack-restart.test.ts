import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../../../test/helpers/eventually.ts';
import { documentThenText, startFakeModel } from '../../../../test/helpers/fake-model.ts';
import { type FakeSlack, startFakeSlack } from '../../../../test/helpers/fake-slack.ts';
import { freePort } from '../../../../test/helpers/http.ts';
import {
  apiClient,
  createWebhookThroughApi,
  postSignedEvent,
  serverProcessEnvironment,
  startServerProcess,
} from '../../../../test/helpers/server-process.ts';

let model: Awaited<ReturnType<typeof startFakeModel>>;
beforeAll(async () => {
  model = await startFakeModel();
  model.script(documentThenText());
});
afterAll(async () => {
  await model?.close();
});

const APPROVAL_SCOPES = ['chat:write', 'users:read', 'users:read.email'];

/**
 * A server process whose org posts approvals in a Slack workspace of its own, granted `scopes`, and an
 * action whose generateDocument call waits while Slack holds the answer to its message's post (the
 * message is in the channel; the service has not heard so). The post waits for its answer up to 60 s
 * unless `env` says otherwise. `restart` stops the server (SIGTERM), lets Slack answer, and starts it again:
 * the held post is handed back after 1 s (SHUTDOWN_GRACE_SECONDS), not the default 10.
 */
async function postHeldInSlack(scopes: string[], env: Record<string, string> = { SLACK_API_TIMEOUT_SECONDS: '60' }) {
  const slack = await startFakeSlack();
  onTestFinished(slack.close);
  slack.grantScopes(scopes);
  const own = await serverProcessEnvironment({ ...model.env, SLACK_API_URL: slack.url, SHUTDOWN_GRACE_SECONDS: '1', ...env });
  onTestFinished(own.cleanup);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startServerProcess(own.env, port);
  const credentials = own.createAdmin();
  const api = await apiClient(base, credentials);
  await api('PUT', '/orgs/acme/slack', {
    botToken: slack.token,
    signingSecret: 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
    channel: 'C0APPROVALS',
  });
  const webhook = await createWebhookThroughApi(api, {
    tools: ['generateDocument'],
    approvalRules: { generateDocument: 'ask' },
    notify: ['slack'],
  });
  const posting = slack.holdNextPost();
  const actionId = await postSignedEvent(base, webhook, { eventType: 'order', externalId: 'o-1', data: { order: 42 } });
  await posting.held;
  return {
    slack,
    api,
    actionId,
    release: posting.release,
    env: own.env,
    restart: async () => {
      const exited = new Promise<number | null>((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      expect(await exited).toBe(0);
      posting.release();
      await startServerProcess(own.env, port);
      return apiClient(base, credentials);
    },
  };
}

type Api = Awaited<ReturnType<typeof apiClient>>;

/** A message posted in the approvals channel by someone else, with `metadata` as Slack takes it. */
async function postAsAnotherApp(slack: FakeSlack, metadata: Record<string, unknown>) {
  const answer = await fetch(`${slack.url}chat.postMessage`, {
    method: 'POST',
    headers: { authorization: `Bearer ${slack.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ channel: 'C0APPROVALS', text: 'Something else', metadata }),
  });
  expect(await answer.json()).toMatchObject({ ok: true });
}

/** The action's messages in the channel, by the metadata the service gives each. */
const messagesOf = (slack: FakeSlack, actionId: string) =>
  [...slack.messages.values()].filter((message) => message.metadata?.event_payload?.action_id === actionId);
const buttonsOf = (message: { blocks: any[] }) => message.blocks.filter((block) => block.type === 'actions');

/** The action's call once its Slack notification is no longer `sending`. */
const settledCall = (api: Api, actionId: string) =>
  eventually(
    'the Slack notification settled',
    async () => {
      const [call] = (await api('GET', `/orgs/acme/ledger/${actionId}`)).execution.toolCalls;
      const slackNotification = call?.notifications.find((notification: { channel: string }) => notification.channel === 'slack');
      return slackNotification && slackNotification.status !== 'sending' ? call : undefined;
    },
    45_000,
  );

describe('an approval message in Slack across a SIGTERM', () => {
  it('cut off after Slack posted it: found in the channel by its metadata, not posted again, and decisions update it', async () => {
    const held = await postHeldInSlack([...APPROVAL_SCOPES, 'channels:history']);
    const [message] = messagesOf(held.slack, held.actionId);
    expect(message!.metadata).toMatchObject({
      event_type: 'agent_platform_approval',
      event_payload: { action_id: held.actionId },
    });
    // Other messages in the channel meanwhile, with our metadata's type: one without a payload, one of
    // another action.
    await postAsAnotherApp(held.slack, { event_type: 'agent_platform_approval' });
    await postAsAnotherApp(held.slack, {
      event_type: 'agent_platform_approval',
      event_payload: { action_id: randomUUID(), calls: `${randomUUID()},,\u0000` },
    });
    const api = await held.restart();

    const call = await settledCall(api, held.actionId);
    expect(call.notifications).toEqual([expect.objectContaining({ channel: 'slack', status: 'sent' })]);
    expect(messagesOf(held.slack, held.actionId)).toEqual([message]);
    const posts = held.slack.callsOf('chat.postMessage');
    expect(posts.filter((post) => post.args.metadata?.event_payload?.action_id === held.actionId)).toHaveLength(1);

    // The message found is the one on the record: a decision in the console updates it.
    await api('POST', `/orgs/acme/actions/${held.actionId}/tool-calls/${call.toolCallId}/reject`, { reason: 'Not now' });
    await eventually('the message updated', async () => buttonsOf(message!).length === 0 || undefined);
    expect(JSON.stringify(message!.blocks)).toContain('Not now');
  }, 120_000);

  it('cut off, and decided in the console meanwhile: the message found shows the decision', async () => {
    const held = await postHeldInSlack([...APPROVAL_SCOPES, 'channels:history']);
    const [message] = messagesOf(held.slack, held.actionId);
    const [waiting] = (await held.api('GET', `/orgs/acme/ledger/${held.actionId}`)).execution.toolCalls;
    const rejected = await held.api('POST', `/orgs/acme/actions/${held.actionId}/tool-calls/${waiting.toolCallId}/reject`, {
      reason: 'Decided while it was posted',
    });
    expect(rejected.status).toBe('rejected');
    const api = await held.restart();

    const call = await settledCall(api, held.actionId);
    expect(call.notifications).toEqual([expect.objectContaining({ channel: 'slack', status: 'sent' })]);
    await eventually('the message updated', async () => buttonsOf(message!).length === 0 || undefined);
    expect(JSON.stringify(message!.blocks)).toContain('Decided while it was posted');
    expect(messagesOf(held.slack, held.actionId)).toEqual([message]);
  }, 120_000);

  it('without the scope to read the channel: a call that still waits is posted again, as Slack offers no other way', async () => {
    const held = await postHeldInSlack(APPROVAL_SCOPES);
    const api = await held.restart();

    const call = await settledCall(api, held.actionId);
    expect(call.notifications).toEqual([expect.objectContaining({ channel: 'slack', status: 'sent' })]);
    const messages = messagesOf(held.slack, held.actionId);
    expect(messages).toHaveLength(2);
    // The record keeps the second, which decisions update.
    await api('POST', `/orgs/acme/actions/${held.actionId}/tool-calls/${call.toolCallId}/reject`, { reason: 'Not now' });
    await eventually('the message updated', async () => buttonsOf(messages[1]!).length === 0 || undefined);
  }, 120_000);

  it('without the scope, and decided meanwhile: not posted again, and the record says why', async () => {
    const held = await postHeldInSlack(APPROVAL_SCOPES);
    const [waiting] = (await held.api('GET', `/orgs/acme/ledger/${held.actionId}`)).execution.toolCalls;
    await held.api('POST', `/orgs/acme/actions/${held.actionId}/tool-calls/${waiting.toolCallId}/reject`, { reason: 'No' });
    const api = await held.restart();

    const call = await settledCall(api, held.actionId);
    expect(call.notifications).toEqual([
      expect.objectContaining({
        channel: 'slack',
        status: 'not_sent',
        reason: 'the call no longer waited when its cut-off message could be posted again',
      }),
    ]);
    expect(messagesOf(held.slack, held.actionId)).toHaveLength(1);
  }, 120_000);
});

describe('an approval message in Slack whose post Slack does not answer in time', () => {
  it('is not posted again by the client: the job tries again later and finds it in the channel', async () => {
    const held = await postHeldInSlack([...APPROVAL_SCOPES, 'channels:history'], { SLACK_API_TIMEOUT_SECONDS: '1' });
    const [message] = messagesOf(held.slack, held.actionId);
    const before = held.slack.calls.length;
    // What the service asks of Slack next, after the post timed out: a post again, or the channel's history.
    const next = await eventually('Slack called after the post', async () => held.slack.calls[before], 30_000);
    expect(next.method).toBe('conversations.history');
    held.release();

    const call = await settledCall(held.api, held.actionId);
    expect(call.notifications).toEqual([expect.objectContaining({ channel: 'slack', status: 'sent' })]);
    expect(held.slack.callsOf('chat.postMessage')).toHaveLength(1);
    expect(messagesOf(held.slack, held.actionId)).toEqual([message]);
  }, 120_000);

  // The job's last attempt is made due at once in its table (the wait would be 20 to 40 minutes): PostgreSQL only.
  it.runIf(process.env.TEST_DB === 'postgres')(
    "at the job's last attempt, a post Slack never answers is recorded failed, saying the message may be in the channel",
    async () => {
      const held = await postHeldInSlack(APPROVAL_SCOPES, { SLACK_API_TIMEOUT_SECONDS: '1' });
      const lastPost = held.slack.holdNextPost();
      const database = new pg.Client({ connectionString: held.env.DATABASE_URL });
      await database.connect();
      onTestFinished(() => database.end());
      await eventually('the job waiting to be tried again, made its last try', async () => {
        const made = await database.query(
          `update pgboss.job set retry_count = retry_limit, start_after = now()
            where name = 'approvals.notify' and state = 'retry' and data->>'actionId' = $1`,
          [held.actionId],
        );
        return made.rowCount === 1 || undefined;
      });
      await lastPost.held;

      const call = await settledCall(held.api, held.actionId);
      expect(call.notifications).toEqual([
        expect.objectContaining({
          channel: 'slack',
          status: 'failed',
          reason: 'Slack did not answer the post, to the last attempt (the message may be in the channel)',
        }),
      ]);
      held.release();
      lastPost.release();
    },
    120_000,
  );
});
