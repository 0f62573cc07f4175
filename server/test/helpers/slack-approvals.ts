import { afterAll, beforeAll, expect } from 'vitest';
import { waitingToolCall } from './refunds.ts';
import { eventually } from './eventually.ts';
import { createUser } from './factories.ts';
import { type ChatRequest, calledTools, toolResults } from './fake-model.ts';
import { type FakeSlack, postInteraction, startFakeSlack } from './fake-slack.ts';
import { startTestMcpServer, type TestMcpServer } from './mcp-server.ts';
import { type FakeModel, useAppWithModel } from './model-app.ts';
import type { TestApp } from './test-app.ts';
import { setupWebhook, type WebhookSetup } from './webhooks.ts';

export const SIGNING_SECRET = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

/** Proposes a refund of 250 (or `args`); then says what the tool (or the reviewer) answered. */
export const refund =
  (args: Record<string, unknown> = { orderId: 'A-1', amount: 250 }) =>
  (request: ChatRequest) =>
    calledTools(request)
      ? { text: `Result: ${JSON.stringify(toolResults(request).at(-1)!.content)}` }
      : { toolCalls: [{ name: 'orders__refund_order', arguments: args }] };

export interface Waiting {
  setup: WebhookSetup;
  actionId: string;
  toolCallId: string;
  /** The admin's Slack user id (the workspace knows their email). */
  adminSlackId: string;
  url: string;
}

/**
 * For a test file of approvals in Slack: a loopback Slack workspace, the orders MCP server and a test
 * app with its model, started before the file's tests; and the steps those tests take. Jobs are not
 * polled for (the test apps' default): a message is posted and updated because its job's workers are woken.
 */
export function useSlackApprovals() {
  const started = {} as { app: TestApp; model: FakeModel; slack: FakeSlack; orders: TestMcpServer };
  beforeAll(async () => {
    started.slack = await startFakeSlack();
    started.orders = await startTestMcpServer();
  });
  afterAll(async () => {
    await started.slack?.close();
    await started.orders?.close();
  });
  useAppWithModel(
    () => ({ SLACK_API_URL: started.slack.url, MCP_ALLOW_PRIVATE_NETWORKS: 'true' }),
    ({ app, model }) => Object.assign(started, { app, model }),
  );
  const now = () => Math.floor(started.app.clock.now().getTime() / 1000);

  return {
    started,
    now,
    /** An org with its Slack app connected, and a refund waiting under a rule that notifies in Slack. */
    async waitingRefund(args?: Record<string, unknown>): Promise<Waiting> {
      const { app, slack, orders, model } = started;
      const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'ask' }, notify: ['slack'] });
      const { org, token, admin } = setup.tenant;
      const adminSlackId = slack.addUser(admin.email).id;
      const connected = await app.request('PUT', `/orgs/${org.slug}/slack`, {
        token,
        body: { botToken: slack.token, signingSecret: SIGNING_SECRET, channel: 'C0APPROVALS' },
      });
      expect(connected.status).toBe(200);
      const { actionId, toolCallId } = await waitingToolCall(app, setup, { orders, model, script: refund(args) });
      return { setup, actionId, toolCallId, adminSlackId, url: `${app.baseUrl}/webhooks/slack/${org.slug}` };
    },
    /** The rule now needs two approvals: a second admin to give one, and the rule as the PATCH answered. */
    async twoApprovals(waiting: Waiting) {
      const { app } = started;
      const { org, token } = waiting.setup.tenant;
      const second = await createUser(app, { role: 'Admin', org: org.slug });
      const patched = await app.request('PATCH', `/orgs/${org.slug}/action-rules/${waiting.setup.ruleId}`, {
        token,
        body: { minApprovals: 2 },
      });
      expect(patched.status).toBe(200);
      return { second, rule: await patched.json() };
    },
    /** The message posted for the action, once it is there. */
    messageOf: (actionId: string) =>
      eventually('the Slack message', async () =>
        [...started.slack.messages.values()].find((message) => JSON.stringify(message.blocks).includes(actionId)),
      ),
    buttonsOf: (message: { blocks: any[] }) =>
      message.blocks.filter((block) => block.type === 'actions').flatMap((block) => block.elements),
    /** A click on a message's button, with a fresh trigger id (or `trigger`, one Slack never issued). */
    click: (waiting: Waiting, user: string, actionId: string, value: string, trigger = started.slack.issueTrigger()) =>
      postInteraction(
        waiting.url,
        SIGNING_SECRET,
        {
          type: 'block_actions',
          user: { id: user },
          trigger_id: trigger,
          channel: { id: 'C0APPROVALS' },
          actions: [{ action_id: actionId, value }],
        },
        { timestamp: now() },
      ),
    submit: (waiting: Waiting, user: string, view: any, values: Record<string, string>) =>
      postInteraction(
        waiting.url,
        SIGNING_SECRET,
        {
          type: 'view_submission',
          user: { id: user },
          view: {
            callback_id: view.callback_id,
            private_metadata: view.private_metadata,
            state: {
              values: Object.fromEntries(Object.entries(values).map(([block, value]) => [block, { value: { value } }])),
            },
          },
        },
        { timestamp: now() },
      ),
    /** What the orders server did for this call. */
    refunds: (toolCallId: string) =>
      started.orders.sideEffects.filter((effect) => effect.toolCallId === toolCallId).map((effect) => effect.arguments),
    /** The last modal of this kind (edit, send_back, reject) opened for the action, once there is one. */
    openedView: (kind: string, actionId: string) =>
      eventually(`the ${kind} modal`, async () => {
        const view = started.slack.callsOf('views.open').at(-1)?.args.view;
        return view?.callback_id === kind && view.private_metadata.includes(actionId) ? view : undefined;
      }),
  };
}
