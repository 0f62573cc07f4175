import { waitForAction } from './actions.ts';
import { auth, runEvent } from './callbacks.ts';
import type { Script } from './fake-model.ts';
import type { TestMcpServer } from './mcp-server.ts';
import type { FakeModel } from './model-app.ts';
import type { TestApp } from './test-app.ts';
import type { WebhookSetup } from './webhooks.ts';

/**
 * The org's agent gets the `orders` MCP server's refund tool, the model proposes what `script` says,
 * and one event runs until its call waits for a person: the action and the waiting call.
 */
export async function waitingToolCall(
  app: TestApp,
  setup: WebhookSetup,
  parts: { orders: TestMcpServer; model: FakeModel; script: Script },
): Promise<{ actionId: string; toolCallId: string }> {
  const { org, token } = setup.tenant;
  await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: parts.orders.url } });
  await app.request('PATCH', `/orgs/${org.slug}/agents/${setup.agentId}`, { token, body: { tools: ['orders__refund_order'] } });
  parts.model.script(parts.script);
  const actionId = await runEvent(app, setup);
  await waitForAction(app, auth(setup), actionId, ['pending_approval']);
  const [{ toolCallId }] = (await (await app.request('GET', `/orgs/${org.slug}/approvals`, { token })).json()).approvals;
  return { actionId, toolCallId };
}
