import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { createTenant, createUser } from './factories.ts';
import { type FakeInbound, type FakeWebhook, postSignedNotification, startFakeMailProvider } from './fake-mail-provider.ts';
import { type FakeModel, useAppWithModel } from './model-app.ts';
import type { TestApp } from './test-app.ts';
import type { WebhookSetup } from './webhooks.ts';

export type FakeMailProvider = Awaited<ReturnType<typeof startFakeMailProvider>>;

/**
 * A test app whose model and mail provider are loopback fakes, for the whole file: the provider is
 * started first and closed after the app, and a failed call to it is not retried (MAIL_API_RETRIES 0),
 * so that a test sees it at once. `env` adds to that.
 */
export function useAppWithMailProvider(
  env: Record<string, string>,
  use: (started: { app: TestApp; model: FakeModel; provider: FakeMailProvider }) => void,
): void {
  let provider: FakeMailProvider | undefined;
  beforeAll(async () => {
    provider = await startFakeMailProvider();
  });
  useAppWithModel(
    () => ({ MAIL_API_URL: provider!.url, MAIL_API_RETRIES: '0', ...env }),
    (started) => use({ ...started, provider: provider! }),
  );
  afterAll(async () => {
    await provider?.close();
  });
}

/**
 * A fresh tenant with everything inbound email needs, made through the API: an integration whose
 * provider account has its own verified domain, an agent, an inbox on that domain and (unless told
 * otherwise) the agent assigned as primary with autoRespond. `notify` posts a notification as the
 * provider would, signed with this org's webhook secret.
 */
export async function setUpEmailOrg(
  app: TestApp,
  provider: FakeMailProvider,
  options: {
    autoRespond?: boolean;
    agentTools?: string[];
    approvalRules?: Record<string, string>;
    notify?: Array<'email' | 'slack'>;
  } = {},
) {
  const tenant = await createTenant(app);
  const { token, org } = tenant;
  const api = async (method: string, path: string, body?: unknown) =>
    app.request(method, `/orgs/${org.slug}${path}`, { token, body });
  const apiKey = `re_${randomUUID()}`;
  const domain = `${randomUUID().slice(0, 8)}.example.com`;
  provider.addKey(apiKey, { domains: [{ name: domain }] });
  const webhook: FakeWebhook = { url: `${app.baseUrl}/webhooks/mail`, secret: `whsec_${randomBytes(24).toString('base64')}` };
  const saved = await api('PUT', '/email/integration', {
    apiKey,
    fromEmail: `agents@${domain}`,
    fromName: 'Acme Agents',
    webhookSecret: webhook.secret,
  });
  if (saved.status !== 200) throw new Error(`integration not saved: ${saved.status} ${await saved.text()}`);
  const agent = await (
    await api('POST', '/agents', { name: 'Support', instructions: 'Answer customers.', tools: options.agentTools ?? [] })
  ).json();
  const inbox = await (await api('POST', '/email/inboxes', { emailAddress: `help@${domain}`, displayName: 'Help desk' })).json();
  if (!inbox.id) throw new Error(`inbox not created: ${JSON.stringify(inbox)}`);
  if (options.autoRespond !== false) {
    const assigned = await api('POST', `/email/inboxes/${inbox.id}/agents`, {
      agentId: agent.id,
      isPrimary: true,
      autoRespond: true,
      ...(options.approvalRules ? { approvalRules: options.approvalRules } : {}),
      ...(options.notify ? { notify: options.notify } : {}),
    });
    if (assigned.status !== 201) throw new Error(`agent not assigned: ${assigned.status} ${await assigned.text()}`);
  }
  return {
    ...tenant,
    auth: { token, org: org.slug },
    api,
    apiKey,
    domain,
    agentId: agent.id as string,
    inbox: inbox as { id: string; emailAddress: string; displayName: string },
    webhook,
    /** Posts a notification signed with this org's secret (or as `options` say). */
    notify: (event: unknown, options?: Parameters<typeof postSignedNotification>[2]) =>
      postSignedNotification(webhook, event, options),
    /** An email received at the provider, and its notification acknowledged (signed at the app's time); its Message-ID. */
    async deliver(email: FakeInbound): Promise<string> {
      const received = provider.receive(email);
      const timestamp = Math.floor(app.clock.now().getTime() / 1000);
      const answer = await postSignedNotification(webhook, provider.receivedEvent(received.id), { timestamp });
      if (answer.status !== 200) throw new Error(`notification not acknowledged: ${answer.status} ${await answer.text()}`);
      return received.messageId;
    },
  };
}

/**
 * An org with an email integration, two admins, and a webhook whose rule asks before generateDocument
 * and notifies by email; `rule` adds to the rule.
 */
export async function setUpApprovalOrg(app: TestApp, provider: FakeMailProvider, rule: Record<string, unknown> = {}) {
  const org = await setUpEmailOrg(app, provider, { autoRespond: false });
  const second = await createUser(app, { role: 'Admin', org: org.org.slug });
  const agent = await (
    await org.api('POST', '/agents', { name: 'Helper', instructions: 'Help.', tools: ['generateDocument'] })
  ).json();
  const created = await org.api('POST', '/action-rules', {
    name: 'Documents',
    agentId: agent.id,
    approvalRules: { generateDocument: 'ask' },
    notify: ['email'],
    ...rule,
  });
  expect(created.status).toBe(201);
  const ruleId = (await created.json()).id as string;
  const webhook = await (
    await org.api('POST', '/webhooks', { name: 'Orders', actionRuleId: ruleId, runAsUserId: org.admin.id })
  ).json();
  const setup: WebhookSetup = {
    tenant: { org: org.org, admin: org.admin, token: org.token },
    agentId: agent.id,
    ruleId,
    webhook: webhook.webhook,
    secret: webhook.secret,
    path: new URL(webhook.url).pathname,
  };
  return { org, second, setup };
}
