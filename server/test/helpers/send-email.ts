import { randomBytes, randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { expect } from 'vitest';
import type { DB } from '../../src/db/schema.ts';
import { waitForAction } from './actions.ts';
import type { FakeMailProvider } from './email.ts';
import { type FakeWebhook, postSignedNotification } from './fake-mail-provider.ts';
import { type ChatRequest, eventData, toolResults } from './fake-model.ts';
import type { TestApp } from './test-app.ts';
import { postEvent, setupWebhook } from './webhooks.ts';

/**
 * A model that does what the event says: `data.document` first makes a PDF, then `data.send` is sent
 * (with that PDF attached); once it has the result, it reports what the tool answered.
 */
export const followSendEvent = (request: ChatRequest) => {
  const data = eventData(request);
  const results = toolResults(request);
  if (data.document && results.length === 0) return { toolCalls: [{ name: 'generateDocument', arguments: data.document }] };
  const sent = results.length === (data.document ? 2 : 1);
  if (sent) return { text: `Tool said: ${JSON.stringify(results.at(-1)!.content)}` };
  const documentId = data.document ? results[0]!.content.documentId : undefined;
  return {
    toolCalls: [{ name: 'sendEmail', arguments: { ...data.send, ...(documentId ? { attachDocumentIds: [documentId] } : {}) } }],
  };
};

/** A webhook whose agent may send email and make documents without asking, in an org with (or without) an integration. */
export async function setUpSendingOrg(
  app: TestApp,
  provider: FakeMailProvider,
  integration?: { domainStatus?: 'verified' | 'pending' },
) {
  const setup = await setupWebhook(app, {}, { approvalRules: { sendEmail: 'allow', generateDocument: 'allow' } });
  const { org, token } = setup.tenant;
  await app.request('PATCH', `/orgs/${org.slug}/agents/${setup.agentId}`, {
    token,
    body: { tools: ['sendEmail', 'generateDocument'] },
  });
  const domain = `${randomUUID().slice(0, 8)}.example.com`;
  const webhook: FakeWebhook = { url: `${app.baseUrl}/webhooks/mail`, secret: `whsec_${randomBytes(24).toString('base64')}` };
  if (integration) {
    const apiKey = `re_${randomUUID()}`;
    provider.addKey(apiKey, { domains: [{ name: domain, status: integration.domainStatus ?? 'verified' }] });
    const saved = await app.request('PUT', `/orgs/${org.slug}/email/integration`, {
      token,
      body: {
        apiKey,
        fromEmail: `agents@${domain}`,
        fromName: 'Acme Agents',
        webhookSecret: webhook.secret,
      },
    });
    expect(saved.status).toBe(200);
  }
  /** Posts an event and waits for its action to finish; returns the sendEmail call's stored output. */
  const run = async (data: Record<string, unknown>) => {
    const posted = await postEvent(app, setup, { eventType: 'customer.update', data });
    const { actionId } = await posted.json();
    const action = await waitForAction(app, { token, org: org.slug }, actionId, ['completed', 'failed']);
    return action.execution.toolCalls.find((call: { toolName: string }) => call.toolName === 'sendEmail');
  };
  /** Posts a notification as the provider would, signed with this org's secret. */
  const notify = (event: unknown) => postSignedNotification(webhook, event);
  /** The org's one outbound message, as the thread API shows it. */
  const onlyMessage = async () => {
    const api = async (path: string) => (await app.request('GET', `/orgs/${org.slug}/email${path}`, { token })).json();
    const { threads } = await api('/threads');
    expect(threads).toHaveLength(1);
    const { messages } = await api(`/threads/${threads[0].id}`);
    expect(messages).toHaveLength(1);
    return messages[0];
  };
  return { ...setup, domain, run, notify, onlyMessage, auth: { token, org: org.slug } };
}

/**
 * Runs `test` with the send-again jobs queued meanwhile put off an hour (a trigger on pg-boss's table), so
 * that a message still waits for its job however slow the machine: the test makes the job due itself.
 */
export async function withSendAgainPutOff(db: Kysely<DB>, test: () => Promise<void>): Promise<void> {
  await sql`create function put_off_send_again() returns trigger language plpgsql as $$
    begin new.start_after := now() + interval '1 hour'; return new; end $$`.execute(db);
  await sql`create trigger put_off_send_again before insert on pgboss.job for each row
    when (new.name = 'email.send-again') execute function put_off_send_again()`.execute(db);
  try {
    await test();
  } finally {
    await sql`drop function put_off_send_again cascade`.execute(db);
  }
}
