import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { eventually } from '../../../test/helpers/eventually.ts';
import { postSignedNotification, startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { calledTools, documentThenText, eventData, startFakeModel } from '../../../test/helpers/fake-model.ts';
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
/**
 * A server process's model and mail provider, the fakes of this file. Work that a fake holds at a
 * SIGTERM gets 1 s to finish (SHUTDOWN_GRACE_SECONDS), not 10: it is handed back the same way.
 */
const providersEnv = () => ({ ...model.env, MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0', SHUTDOWN_GRACE_SECONDS: '1' });

beforeAll(async () => {
  model = await startFakeModel();
  provider = await startFakeMailProvider();
  environment = await serverProcessEnvironment({
    ...providersEnv(),
    EMAIL_PROCESSING_LEASE_SECONDS: '1',
    ACTION_LEASE_SECONDS: '1',
  });
});
afterAll(async () => {
  await environment?.cleanup();
  await provider?.close();
  await model?.close();
});

type Api = Awaited<ReturnType<typeof apiClient>>;

/** Org acme's email integration on the fake provider, sending from agents@`domain`; its notifications' webhook. */
async function emailIntegration(api: Api, base: string, domain: string) {
  const apiKey = `re_${randomUUID()}`;
  provider.addKey(apiKey, { domains: [{ name: domain }] });
  const webhook = { url: `${base}/webhooks/mail`, secret: `whsec_${randomBytes(24).toString('base64')}` };
  await api('PUT', '/orgs/acme/email/integration', { apiKey, fromEmail: `agents@${domain}`, webhookSecret: webhook.secret });
  return webhook;
}

/** An org's email integration on the fake provider, with an inbox whose agent replies to every email. */
async function answeringInbox(api: Api, base: string) {
  const webhook = await emailIntegration(api, base, 'restart.example.com');
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

/** Stops the server (SIGTERM) while the provider holds an answer it waits for, lets the answer go, and starts it again. */
async function restartWhileHeld(server: ChildProcess, held: { release(): void }, env: Record<string, string>, port: number) {
  const exited = new Promise<number | null>((resolve) => server.once('exit', resolve));
  server.kill('SIGTERM');
  expect(await exited).toBe(0);
  held.release();
  return startServerProcess(env, port);
}

describe('email across a SIGTERM', () => {
  it('a notification its stopping worker could not finish is taken over at once, not after its lease', async () => {
    // A lease far longer than the test may wait: only its release lets the next process take over.
    const stopping = await serverProcessEnvironment({ ...providersEnv(), EMAIL_PROCESSING_LEASE_SECONDS: '300' });
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
    server = await restartWhileHeld(server, fetching, stopping.env, port);
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

/**
 * A server process of its own with org acme's inbox at quotes@`domain`, whose agent asks before
 * generateDocument (an inbox's default) and tells the admins by email, from agents@`domain`.
 */
async function approvalInboxServer(domain: string) {
  const own = await serverProcessEnvironment(providersEnv());
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  onTestFinished(own.cleanup);
  const server = await startServerProcess(own.env, port);
  const credentials = own.createAdmin();
  const api = await apiClient(base, credentials);
  const webhook = await emailIntegration(api, base, domain);
  const agent = await api('POST', '/orgs/acme/agents', { name: 'Quotes', tools: ['generateDocument'] });
  const inbox = await api('POST', '/orgs/acme/email/inboxes', { emailAddress: `quotes@${domain}`, displayName: 'Q' });
  await api('POST', `/orgs/acme/email/inboxes/${inbox.id}/agents`, {
    agentId: agent.id,
    isPrimary: true,
    autoRespond: true,
    notify: ['email'],
  });
  model.script(documentThenText());
  return { env: own.env, port, base, server, credentials, api, webhook, inbox };
}

describe('a reply to an approval email across a SIGTERM', () => {
  it('read again by the retried job: its refusal is recorded once, and its answer is one message, sent once', async () => {
    const setup = await approvalInboxServer('approvals.example.com');
    const { env, port, base, credentials, webhook, inbox } = setup;
    let { server, api } = setup;
    const quote = provider.receive({ from: 'dana@customer.test', to: [inbox.emailAddress], subject: 'Quote', text: 'A quote?' });
    expect((await postSignedNotification(webhook, provider.receivedEvent(quote.id))).status).toBe(200);
    const approval = await provider.waitFor(credentials.email, 30_000);
    const actionId = approval.text!.match(/Action: ([\w-]+)/)![1]!;

    // A reply from another address decides nothing and is answered; the server stops while the answer is sent.
    const answering = provider.holdNext('send');
    const messageId = `<${randomUUID()}@evil.test>`;
    const stranger = provider.receive({
      from: 'mallory@evil.test',
      to: ['agents@approvals.example.com'],
      subject: `Re: ${approval.subject}`,
      text: 'approve',
      headers: { 'Message-ID': messageId, 'In-Reply-To': approval.messageId, References: approval.messageId },
    });
    expect((await postSignedNotification(webhook, provider.receivedEvent(stranger.id))).status).toBe(200);
    await answering.held;
    server = await restartWhileHeld(server, answering, env, port);
    api = await apiClient(base, credentials);

    // The job the stop failed is retried: it reads the reply again, to the end.
    const thread = await eventually(
      'the reply read after the restart',
      async () => {
        const { threads } = await api('GET', '/orgs/acme/email/threads');
        const found = threads.find((candidate: { subject: string }) => candidate.subject === approval.subject);
        const read = found && (await api('GET', `/orgs/acme/email/threads/${found.id}`));
        const reply = read?.messages.find((message: { direction: string }) => message.direction === 'inbound');
        return reply?.statusDetail?.startsWith('not read as a decision') ? read : undefined;
      },
      45_000,
    );
    const answers = thread.messages.filter((message: { inReplyTo: string | null }) => `<${message.inReplyTo}>` === messageId);
    expect(answers).toEqual([expect.objectContaining({ direction: 'outbound', status: 'sent' })]);
    expect(provider.sent.filter((email) => email.to.includes('mallory@evil.test'))).toHaveLength(1);
    const { execution } = await api('GET', `/orgs/acme/ledger/${actionId}`);
    expect(execution.toolCalls[0].refusedAttempts).toEqual([
      expect.objectContaining({ reason: "A reply from mallory@evil.test, not from the approver's address" }),
    ]);
    expect(execution.toolCalls[0].approval).toBe('pending');
  }, 120_000);
});

/**
 * An approval inbox's server (above) and an approval email that the provider has taken while the
 * server has not heard so: its answer is held. Other tests' approval emails go to the same admin address: `approvals` are this one's.
 */
async function approvalEmailHeld(domain: string) {
  const { env, port, base, server, credentials, api, webhook, inbox } = await approvalInboxServer(domain);
  const sending = provider.holdNext('send');
  const quote = provider.receive({ from: 'eve@customer.test', to: [inbox.emailAddress], subject: 'Quote', text: 'A quote?' });
  expect((await postSignedNotification(webhook, provider.receivedEvent(quote.id))).status).toBe(200);
  await sending.held;
  const approvals = () =>
    provider.sent.filter((email) => email.to.includes(credentials.email) && email.from.includes(`@${domain}`));
  const [approval] = approvals();
  expect(approval).toBeDefined();
  const actionId = approval!.text!.match(/Action: ([\w-]+)/)![1]!;
  return {
    api,
    approval: approval!,
    approvals,
    actionId,
    /** Stops the server while the answer is held, lets it go, starts the server again; a client of the new one. */
    restart: async () => {
      await restartWhileHeld(server, sending, env, port);
      return apiClient(base, credentials);
    },
  };
}

/** The thread of an approval email once its message is no longer `sending`. */
const approvalThreadSettled = (api: Api, subject: string) =>
  eventually(
    'the approval email settled',
    async () => {
      const { threads } = await api('GET', '/orgs/acme/email/threads');
      const found = threads.find((candidate: { subject: string }) => candidate.subject === subject);
      const read = found && (await api('GET', `/orgs/acme/email/threads/${found.id}`));
      return read?.messages.some((message: { status: string }) => message.status !== 'sending') ? read : undefined;
    },
    45_000,
  );

/**
 * After the restart, of an approval email cut off that was not to be sent again: the provider got it
 * once, its message is failed and its notification `not_sent`, both saying `why`. Returns its call.
 */
async function expectNotSentAgain(held: Awaited<ReturnType<typeof approvalEmailHeld>>, api: Api, why: string) {
  const thread = await approvalThreadSettled(api, held.approval.subject);
  expect(thread.messages).toEqual([
    expect.objectContaining({ status: 'failed', statusDetail: `Not sent again after it was cut off: ${why}` }),
  ]);
  expect(held.approvals()).toEqual([held.approval]);
  const [call] = (await api('GET', `/orgs/acme/ledger/${held.actionId}`)).execution.toolCalls;
  expect(call.notifications).toEqual([expect.objectContaining({ channel: 'email', status: 'not_sent', reason: why })]);
  return call;
}

describe('an approval email across a SIGTERM', () => {
  it('cut off after the provider took it: sent again as it was, so the approver gets it once, and its links decide', async () => {
    const held = await approvalEmailHeld('cutoff.example.com');
    const api = await held.restart();

    // The retried job sends the stored email again under its idempotency key: the provider answers with the first one.
    const thread = await approvalThreadSettled(api, held.approval.subject);
    expect(thread.messages).toEqual([expect.objectContaining({ status: 'sent', providerEmailId: held.approval.id })]);
    expect(held.approvals()).toEqual([held.approval]);
    const { execution } = await api('GET', `/orgs/acme/ledger/${held.actionId}`);
    expect(execution.toolCalls[0].notifications).toEqual([expect.objectContaining({ channel: 'email', status: 'sent' })]);

    // The links of the one email sent decide.
    const approve = held.approval.text!.match(/Approve: (\S+\/approvals\/decide\/[\w-]+)/)![1]!;
    const used = await fetch(approve, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(await used.text()).toContain('<h1>Approved</h1>');
    expect((await api('GET', `/orgs/acme/ledger/${held.actionId}`)).execution.toolCalls[0].approval).toBe('approved');
  }, 120_000);

  it('cut off, and the approver turned approval emails off meanwhile: not sent again, and the record says why', async () => {
    const held = await approvalEmailHeld('optout.example.com');
    expect(await held.api('PATCH', '/auth/me/preferences', { approvalEmails: false })).toEqual({ approvalEmails: false });
    const api = await held.restart();

    await expectNotSentAgain(held, api, 'the approver turned approval emails off');
  }, 120_000);

  it('cut off, and its call was decided in the console meanwhile: not sent again, and the record says why', async () => {
    const held = await approvalEmailHeld('decided.example.com');
    const [waiting] = (await held.api('GET', `/orgs/acme/ledger/${held.actionId}`)).execution.toolCalls;
    const decided = await held.api('POST', `/orgs/acme/actions/${held.actionId}/tool-calls/${waiting.toolCallId}/reject`, {
      reason: 'No quotes this week.',
    });
    expect(decided.status).toBe('rejected');
    const api = await held.restart();

    const call = await expectNotSentAgain(held, api, 'none of its calls waits any longer');
    expect(call.approval).toBe('rejected');
  }, 120_000);
});
