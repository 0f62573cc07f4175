import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { type FakeMailProvider, setUpEmailOrg, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { eventData, toolResults } from '../../../test/helpers/fake-model.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import { followSendEvent, setUpSendingOrg } from '../../../test/helpers/send-email.ts';
import { POLL_FOR_DUE_WORK, type TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
// The poll: the later lookup of a sent email's Message-ID.
useAppWithMailProvider({ EMAIL_MAX_RECIPIENTS: '2', ...POLL_FOR_DUE_WORK }, (started) => ({ app, model, provider } = started));

describe('sendEmail', () => {
  it('sends from the integration as a new thread, Markdown as text and HTML, with a generated PDF attached', async () => {
    model.script(followSendEvent);
    const org = await setUpSendingOrg(app, provider, {});
    const to = `hank-${randomUUID().slice(0, 6)}@customer.test`;
    const call = await org.run({
      send: { to, subject: 'Your invoice', body: '# Invoice\n\nPlease find it **attached**.' },
      document: { title: 'Invoice 7', content: '# Invoice 7\n\nTotal: 10 EUR' },
    });
    expect(call).toMatchObject({
      status: 'completed',
      output: { type: 'json', value: { sent: true, to: [to], subject: 'Your invoice' } },
    });
    const email = await provider.waitFor(to);
    expect(email).toMatchObject({
      from: `"Acme Agents" <agents@${org.domain}>`,
      subject: 'Your invoice',
      text: '# Invoice\n\nPlease find it **attached**.',
    });
    expect(email.html).toContain('<h1>Invoice</h1>');
    expect(email.headers).not.toHaveProperty('In-Reply-To');
    expect(email.attachments).toEqual([expect.objectContaining({ filename: 'Invoice 7.pdf', content_type: 'application/pdf' })]);
    expect(Buffer.from(email.attachments![0]!.content, 'base64').subarray(0, 5).toString()).toBe('%PDF-');
    expect(email.tags).toEqual([
      { name: 'ap_org', value: org.tenant.org.id },
      { name: 'ap_message', value: expect.any(String) },
    ]);
    const { threads } = await (await app.request('GET', `/orgs/${org.auth.org}/email/threads`, { token: org.auth.token })).json();
    expect(threads).toEqual([expect.objectContaining({ subject: 'Your invoice', inboxId: null, messageCount: 1 })]);
    const { messages } = await (
      await app.request('GET', `/orgs/${org.auth.org}/email/threads/${threads[0].id}`, { token: org.auth.token })
    ).json();
    expect(messages[0]).toMatchObject({ direction: 'outbound', status: 'sent', providerEmailId: email.id });
    const pdf = await app.request('GET', `/orgs/${org.auth.org}/email/attachments/${messages[0].attachments[0].id}`, {
      token: org.auth.token,
    });
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
  });

  it('learns the Message-ID the provider gave a sent email later, when it did not know it just after the send', async () => {
    model.script(followSendEvent);
    const org = await setUpSendingOrg(app, provider, {});
    provider.withholdMessageIds(1);
    const to = `late-${randomUUID().slice(0, 6)}@customer.test`;
    await org.run({ send: { to, subject: 'Later', body: 'Hi' } });
    const email = await provider.waitFor(to);
    const { threads } = await (await app.request('GET', `/orgs/${org.auth.org}/email/threads`, { token: org.auth.token })).json();
    const message = await eventually('the provider Message-ID learnt by the job', async () => {
      const { messages } = await (
        await app.request('GET', `/orgs/${org.auth.org}/email/threads/${threads[0].id}`, { token: org.auth.token })
      ).json();
      return messages[0].providerMessageId ? messages[0] : undefined;
    });
    expect(`<${message.providerMessageId}>`).toBe(email.messageId);
  });

  it('called again for the same call (as a resumed run calls it), sends nothing: it answers as the first call did', async () => {
    model.script(followSendEvent);
    const org = await setUpSendingOrg(app, provider, {});
    const sendEmail = app.container.tools.get('sendEmail')!;
    /** The org's message of the call, and the tool called again with the call's own context. */
    const callAgain = async (call: { toolCallId: string }, input: Record<string, unknown>) => {
      const { actionId } = await app.container.db
        .selectFrom('emailMessages')
        .select('actionId')
        .where('toolCallId', '=', call.toolCallId)
        .executeTakeFirstOrThrow();
      const context = { orgId: org.tenant.org.id, actionId: actionId!, userId: org.tenant.admin.id, toolCallId: call.toolCallId };
      return sendEmail.execute(sendEmail.inputSchema!.parse(input), { ...context, signal: new AbortController().signal });
    };
    const posts = () => provider.requests.filter((request) => request.method === 'POST' && request.url === '/emails').length;

    const sentTo = `ivy-${randomUUID().slice(0, 6)}@customer.test`;
    const sent = { to: sentTo, subject: 'Once', body: 'Sent once.' };
    const first = await org.run({ send: sent });
    expect(first.output.value).toMatchObject({ sent: true });
    const before = posts();
    expect(await callAgain(first, sent)).toEqual(first.output.value);
    expect(posts()).toBe(before);

    const refusedTo = `jay-${randomUUID().slice(0, 6)}@customer.test`;
    const refused = { to: refusedTo, subject: 'Refused', body: 'Not sent.' };
    provider.failNextSends(1, 422);
    const second = await org.run({ send: refused });
    expect(second).toMatchObject({ status: 'failed', output: { value: expect.stringContaining('did not send it') } });
    await expect(callAgain(second, refused)).rejects.toThrow(/^Not sent: The provider refused it/);
    expect(posts()).toBe(before + 1);
  });

  it('refuses, as a tool error the model sees: no integration, an unverified domain, too many recipients, a document that is not the org’s', async () => {
    model.script(followSendEvent);
    const send = { to: 'ivy@customer.test', subject: 'Hi', body: 'Hello' };
    const notConfigured = await (await setUpSendingOrg(app, provider)).run({ send });
    expect(notConfigured).toMatchObject({
      status: 'failed',
      output: { type: 'error-text', value: 'sendEmail failed: Email integration not configured' },
    });
    const unverified = await (await setUpSendingOrg(app, provider, { domainStatus: 'pending' })).run({ send });
    expect(unverified.output.value).toBe('sendEmail failed: Domain is not verified');
    const verified = await setUpSendingOrg(app, provider, {});
    const crowd = await verified.run({ send: { ...send, to: 'a@customer.test, b@customer.test; c@customer.test' } });
    expect(crowd.output.value).toBe('sendEmail failed: Too many recipients: 3 (at most 2)');
    const notAnAddress = await verified.run({ send: { ...send, to: 'not an address' } });
    expect(notAnAddress.output.value).toBe('sendEmail failed: "not an address" is not an email address');
    const foreignDocument = randomUUID();
    const unknown = await verified.run({ send: { ...send, attachDocumentIds: [foreignDocument] } });
    expect(unknown.output.value).toBe(
      `sendEmail failed: Document not found: ${foreignDocument} (attach documentIds that generateDocument returned)`,
    );
    expect(provider.sent.filter((email) => email.to.includes('ivy@customer.test'))).toEqual([]);
  });
});

describe('bounces, complaints and delivery events', () => {
  /** An org whose agent answered a customer: the reply as the provider sent it. */
  async function answered() {
    model.script((request) =>
      toolResults(request).length > 0
        ? { text: 'Done.' }
        : { toolCalls: [{ name: 'sendEmail', arguments: { to: eventData(request).from, subject: 'x', body: 'Answer' } }] },
    );
    const org = await setUpEmailOrg(app, provider);
    const customer = `judy-${randomUUID().slice(0, 6)}@customer.test`;
    const received = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Question', text: '?' });
    await org.notify(provider.receivedEvent(received.id));
    const reply = await provider.waitFor(customer);
    const { threads } = await eventually('the thread', async () => {
      const body = await (await org.api('GET', '/email/threads')).json();
      return body.threads.length === 1 ? body : undefined;
    });
    const sentMessage = async () => (await (await org.api('GET', `/email/threads/${threads[0].id}`)).json()).messages[1];
    return { org, customer, reply, sentMessage };
  }

  it('shows the delivery timeline; a permanent bounce suppresses the address, sendEmail then refuses it, and an admin can lift it', async () => {
    const { org, customer, reply, sentMessage } = await answered();
    for (const type of ['email.sent', 'email.delivered'])
      expect((await org.notify(provider.sentEvent(reply.id, type))).status).toBe(200);
    await eventually('delivered', async () => ((await sentMessage()).status === 'delivered' ? true : undefined));
    // Out of order: a late email.sent does not move it back.
    await org.notify(provider.sentEvent(reply.id, 'email.sent'));
    const bounce = { type: 'Permanent', subType: 'General', message: 'The mailbox does not exist' };
    expect((await org.notify(provider.sentEvent(reply.id, 'email.bounced', { bounce }))).status).toBe(200);
    // The late email.sent and the bounce may be processed together, and either may be stored first.
    const message = await eventually('bounced, and the late email.sent recorded', async () => {
      const current = await sentMessage();
      return current.status === 'bounced' && current.deliveryEvents.length === 4 ? current : undefined;
    });
    expect(message.statusDetail).toBe('Permanent (General): The mailbox does not exist');
    expect(message.deliveryEvents.map((event: { type: string }) => event.type)).toEqual(['sent', 'delivered', 'sent', 'bounced']);
    expect(message.deliveryEvents[3].data).toEqual({ bounce });
    const { suppressions } = await (await org.api('GET', '/email/suppressions')).json();
    expect(suppressions).toEqual([expect.objectContaining({ address: customer, reason: 'bounced', messageId: message.id })]);

    // The customer writes again: the agent's reply is refused, and the ledger shows why.
    const again = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Again', text: '?' });
    await org.notify(provider.receivedEvent(again.id));
    const row = await eventually('the second action done', async () => {
      const body = await (await org.api('GET', '/ledger?source=email')).json();
      return body.rows.length === 2 && body.rows[0].status === 'completed' ? body.rows[0] : undefined;
    });
    const detail = await (await org.api('GET', `/ledger/${row.actionId}`)).json();
    expect(detail.execution.toolCalls[0].output.value).toMatch(
      /^sendEmail failed: Not sent: .+ \(bounced\) is on the suppression list/,
    );

    const guest = await app.request('DELETE', `/orgs/${org.org.slug}/email/suppressions/${customer}`);
    expect(guest.status).toBe(401);
    expect((await org.api('DELETE', `/email/suppressions/${encodeURIComponent(customer.toUpperCase())}`)).status).toBe(204);
    expect((await org.api('DELETE', `/email/suppressions/${encodeURIComponent(customer)}`)).status).toBe(404);
    expect((await (await org.api('GET', '/email/suppressions')).json()).suppressions).toEqual([]);
  });

  it.runIf(process.env.TEST_DB === 'postgres')(
    'an event moves on from the status the one recorded before it left, even one recorded while it was processed',
    async () => {
      const { org, reply, sentMessage } = await answered();
      const { id } = await sentMessage();
      const { db } = app.container;
      const waitingOnLocks = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`.execute(db)
        ).rows[0]!.n;
      // While the delivery is being processed, another process records a bounce of the email.
      await db.transaction().execute(async (trx) => {
        await trx.selectFrom('emailMessages').select('id').where('id', '=', id).forUpdate().execute();
        await org.notify(provider.sentEvent(reply.id, 'email.delivered'));
        await eventually('the delivery waiting', async () => ((await waitingOnLocks()) === 1 ? true : undefined));
        await trx.updateTable('emailMessages').set({ status: 'bounced' }).where('id', '=', id).execute();
      });
      const message = await eventually('the delivery recorded', async () => {
        const current = await sentMessage();
        return current.deliveryEvents.length === 1 ? current : undefined;
      });
      expect(message.deliveryEvents[0].type).toBe('delivered');
      expect(message.status).toBe('bounced');
    },
  );

  it('a delivery event that comes while the send is still being answered is kept', async () => {
    const held = provider.holdNext('send');
    const { org, reply, sentMessage } = await answered();
    await held.held;
    await org.notify(provider.sentEvent(reply.id, 'email.delivered'));
    await eventually('delivered before the send is answered', async () =>
      (await sentMessage()).status === 'delivered' ? true : undefined,
    );
    held.release();
    await eventually('the action done', async () => {
      const { rows } = await (await org.api('GET', '/ledger?source=email')).json();
      return rows[0]?.status === 'completed' ? true : undefined;
    });
    expect(await sentMessage()).toMatchObject({ status: 'delivered', providerEmailId: reply.id });
  });

  it('a temporary bounce only shows in the timeline; a complaint suppresses', async () => {
    const { org, customer, reply, sentMessage } = await answered();
    await org.notify(
      provider.sentEvent(reply.id, 'email.bounced', { bounce: { type: 'Temporary', subType: 'MailboxFull', message: 'Full' } }),
    );
    await eventually('the temporary bounce recorded', async () =>
      (await sentMessage()).deliveryEvents.length === 1 ? true : undefined,
    );
    expect((await sentMessage()).status).toBe('sent');
    expect((await (await org.api('GET', '/email/suppressions')).json()).suppressions).toEqual([]);
    await org.notify(provider.sentEvent(reply.id, 'email.complained'));
    await eventually('complained', async () => ((await sentMessage()).status === 'complained' ? true : undefined));
    expect((await (await org.api('GET', '/email/suppressions')).json()).suppressions).toEqual([
      expect.objectContaining({ address: customer, reason: 'complained' }),
    ]);
  });
});
