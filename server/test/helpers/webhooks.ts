import { signingHeaders } from '../../src/features/ingest/verification.ts';
import type { VerificationScheme } from '../../src/db/schema.ts';
import { createTenant } from './factories.ts';
import type { TestApp, TestResponse } from './test-app.ts';

export interface WebhookSetup {
  tenant: Awaited<ReturnType<typeof createTenant>>;
  agentId: string;
  ruleId: string;
  webhook: { id: string; webhookIdentifier: string; url: string; verificationScheme: VerificationScheme; [key: string]: unknown };
  secret: string;
  path: string;
}

/** A fresh tenant with an agent, an enabled rule and a webhook (run as the tenant's admin), made through the API. */
export async function setupWebhook(
  app: TestApp,
  webhook: Record<string, unknown> = {},
  rule: Record<string, unknown> = {},
): Promise<WebhookSetup> {
  const tenant = await createTenant(app);
  const { token, org } = tenant;
  const agent = await (
    await app.request('POST', `/orgs/${org.slug}/agents`, {
      token,
      body: { name: 'Helper', instructions: 'Help.', tools: ['generateDocument'] },
    })
  ).json();
  const actionRule = await (
    await app.request('POST', `/orgs/${org.slug}/action-rules`, {
      token,
      body: { name: 'Default', agentId: agent.id, approvalRules: { generateDocument: 'allow' }, ...rule },
    })
  ).json();
  const created = await app.request('POST', `/orgs/${org.slug}/webhooks`, {
    token,
    body: { name: 'Orders', actionRuleId: actionRule.id, runAsUserId: tenant.admin.id, ...webhook },
  });
  if (created.status !== 201) throw new Error(`webhook not created: ${created.status} ${await created.text()}`);
  const body = await created.json();
  return {
    tenant,
    agentId: agent.id,
    ruleId: actionRule.id,
    webhook: body.webhook,
    secret: body.secret,
    path: new URL(body.url).pathname,
  };
}

/** Posts a payload signed for the webhook's scheme (or as told). */
export function postEvent(
  app: TestApp,
  setup: Pick<WebhookSetup, 'path' | 'secret'> & { webhook: Pick<WebhookSetup['webhook'], 'verificationScheme'> },
  payload: unknown,
  options: {
    headers?: Record<string, string>;
    scheme?: VerificationScheme;
    nowSeconds?: number;
    messageId?: string;
    path?: string;
    secret?: string;
  } = {},
): Promise<TestResponse> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const nowSeconds = options.nowSeconds ?? Math.floor(app.clock.now().getTime() / 1000);
  const signed = signingHeaders(options.scheme ?? setup.webhook.verificationScheme, options.secret ?? setup.secret, body, {
    ...options,
    nowSeconds,
  });
  return app.request('POST', options.path ?? setup.path, {
    body,
    headers: { 'content-type': 'application/json', ...signed, ...options.headers },
  });
}
