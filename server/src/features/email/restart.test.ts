import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { postSignedNotification, startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { calledTools, eventData, startFakeModel } from '../../../test/helpers/fake-model.ts';
import { freePort } from '../../../test/helpers/http.ts';
import {
  apiClient,
  killServerProcess,
  serverProcessEnvironment,
  startServerProcess,
} from '../../../test/helpers/server-process.ts';

let model: Awaited<ReturnType<typeof startFakeModel>>;
let provider: Awaited<ReturnType<typeof startFakeMailProvider>>;
let environment: Awaited<ReturnType<typeof serverProcessEnvironment>>;
beforeAll(async () => {
  model = await startFakeModel();
  provider = await startFakeMailProvider();
  environment = await serverProcessEnvironment({
    ...model.env,
    MAIL_API_URL: provider.url,
    MAIL_API_RETRIES: '0',
    EMAIL_PROCESSING_LEASE_SECONDS: '1',
    ACTION_LEASE_SECONDS: '1',
  });
});
afterAll(async () => {
  await environment?.cleanup();
  await provider?.close();
  await model?.close();
});

/** An org's email integration on the fake provider, with an inbox whose agent replies to every email. */
async function answeringInbox(api: Awaited<ReturnType<typeof apiClient>>, base: string) {
  const apiKey = `re_${randomUUID()}`;
  provider.addKey(apiKey, { domains: [{ name: 'restart.example.com' }] });
  const webhook = { url: `${base}/webhooks/mail`, secret: `whsec_${randomBytes(24).toString('base64')}` };
  await api('PUT', '/orgs/acme/email/integration', {
    apiKey,
    fromEmail: 'agents@restart.example.com',
    webhookSecret: webhook.secret,
  });
  const agent = await api('POST', '/orgs/acme/agents', { name: 'Support', tools: [] });
  const inbox = await api('POST', '/orgs/acme/email/inboxes', { emailAddress: 'help@restart.example.com', displayName: 'Help' });
  await api('POST', `/orgs/acme/email/inboxes/${inbox.id}/agents`, { agentId: agent.id, isPrimary: true, autoRespond: true });
  model.script((request) =>
    calledTools(request)
      ? { text: 'Replied.' }
      : { toolCalls: [{ name: 'sendEmail', arguments: { to: eventData(request).from, subject: 'x', body: 'We are on it.' } }] },
  );
  return { webhook, inbox };
}

describe('email across a SIGTERM', () => {
  it('a notification its stopping worker could not finish is taken over at once, not after its lease', async () => {
    // A lease far longer than the test may wait: only its release lets the next process take over.
    const stopping = await serverProcessEnvironment({
      ...model.env,
      MAIL_API_URL: provider.url,
      MAIL_API_RETRIES: '0',
      EMAIL_PROCESSING_LEASE_SECONDS: '300',
    });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    onTestFinished(stopping.cleanup); // after the server's kill: those hooks run last registered first
    let server = await startServerProcess(stopping.env, port);
    const api = await apiClient(base, stopping.createAdmin());
    const { webhook, inbox } = await answeringInbox(api, base);
    // Stopped while fetching the email: the fetch outlasts the stop's wait for running jobs.
    const fetching = provider.holdNext('fetch-received');
    const email = provider.receive({ from: 'max@customer.test', to: [inbox.emailAddress], subject: 'Stopped', text: '1' });
    expect((await postSignedNotification(webhook, provider.receivedEvent(email.id))).status).toBe(200);
    await fetching.held;
    const exited = new Promise<number | null>((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    fetching.release();
    server = await startServerProcess(stopping.env, port);
    await provider.waitFor('max@customer.test', 60_000);
    expect(provider.sent.filter((sent) => sent.to.includes('max@customer.test'))).toHaveLength(1);
  }, 120_000);
});

describe('email across a SIGKILL', () => {
  it('finishes a notification acknowledged before the kill, and a reply cut off mid-send is not sent twice', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServerProcess(environment.env, port);
    const credentials = environment.createAdmin();
    let api = await apiClient(base, credentials);
    const { webhook, inbox } = await answeringInbox(api, base);
    const restart = async () => {
      await killServerProcess(server);
      server = await startServerProcess(environment.env, port);
      api = await apiClient(base, credentials);
    };
    const sentTo = (address: string) => provider.sent.filter((email) => email.to.includes(address));

    // 1. Killed while fetching the email it acknowledged.
    const fetching = provider.holdNext('fetch-received');
    const first = provider.receive({ from: 'kim@customer.test', to: [inbox.emailAddress], subject: 'First', text: '1' });
    const acknowledged = await postSignedNotification(webhook, provider.receivedEvent(first.id));
    expect(acknowledged.status).toBe(200);
    await fetching.held;
    await restart();
    fetching.release();
    await provider.waitFor('kim@customer.test', 30_000);

    // 2. Killed after the provider sent the reply but before the server heard so: the resumed run
    // sends again with the same idempotency key, and the provider does not send it twice.
    const sending = provider.holdNext('send');
    const second = provider.receive({ from: 'lee@customer.test', to: [inbox.emailAddress], subject: 'Second', text: '2' });
    expect((await postSignedNotification(webhook, provider.receivedEvent(second.id))).status).toBe(200);
    await sending.held;
    expect(sentTo('lee@customer.test')).toHaveLength(1);
    await restart();
    sending.release();

    const rows = await eventually(
      'both actions completed',
      async () => {
        const ledger = await api('GET', '/orgs/acme/ledger?source=email');
        return ledger.rows.length === 2 && ledger.rows.every((row: { status: string }) => row.status === 'completed')
          ? ledger.rows
          : undefined;
      },
      45_000,
    );
    expect(rows).toHaveLength(2);
    expect(sentTo('kim@customer.test')).toHaveLength(1);
    expect(sentTo('lee@customer.test')).toHaveLength(1);
    const { threads } = await api('GET', '/orgs/acme/email/threads');
    expect(threads.map((thread: { messageCount: number }) => thread.messageCount)).toEqual([2, 2]);
    const lee = await api(
      'GET',
      `/orgs/acme/email/threads/${threads.find((thread: { subject: string }) => thread.subject === 'Second').id}`,
    );
    expect(lee.messages[1]).toMatchObject({ status: 'sent', providerEmailId: sentTo('lee@customer.test')[0]!.id });
  }, 120_000);
});
