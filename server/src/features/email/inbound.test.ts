import { createTenant } from '../../../test/helpers/factories.ts';
import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { type FakeMailProvider, setUpEmailOrg, useAppWithMailProvider } from '../../../test/helpers/email.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { type ChatRequest, calledTools, eventData } from '../../../test/helpers/fake-model.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';

let app: TestApp;
let model: FakeModel;
let provider: FakeMailProvider;
useAppWithMailProvider(
  {
    EMAIL_MAX_ATTACHMENT_BYTES: '4096',
    EMAIL_AUTO_REPLIES_PER_THREAD_PER_HOUR: '3',
  },
  (started) => ({ app, model, provider } = started),
);

/** The agent answers each email with sendEmail to its sender, then says it is done. */
const replyToSender =
  (body = '**Thanks**, we are on it.') =>
  (request: ChatRequest) => {
    if (calledTools(request)) return { text: 'Replied.' };
    const data = eventData(request);
    return { toolCalls: [{ name: 'sendEmail', arguments: { to: data.from, subject: 'ignored in a thread', body } }] };
  };

const attachment = (filename: string, size: number) => ({
  filename,
  contentType: 'application/pdf',
  content: Buffer.alloc(size, filename.length),
});

/** The one message of an org's one thread, once the email is stored. */
async function onlyStoredMessage(org: Awaited<ReturnType<typeof setUpEmailOrg>>) {
  const { threads } = await eventually('the email stored', async () => {
    const body = await (await org.api('GET', '/email/threads')).json();
    return body.threads.length === 1 ? body : undefined;
  });
  return (await (await org.api('GET', `/email/threads/${threads[0].id}`)).json()).messages[0];
}

describe('inbound email', () => {
  it('fetches a received email with two attachments, stores it clean, and the inbox agent answers in its thread', async () => {
    model.script(replyToSender());
    const org = await setUpEmailOrg(app, provider);
    const customer = `alice-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    const received = provider.receive({
      from: `Alice <${customer}>`,
      to: [org.inbox.emailAddress],
      subject: 'Order help',
      text: 'Where is my order?',
      html: [
        '<p onclick="steal()">Where is <b>my order</b>?<script>alert(1)</script></p>',
        '<img src="https://tracker.test/open.gif?u=alice"><img src="data:image/png;base64,iVBORw0KGgo=" alt="logo">',
        '<a href="javascript:alert(1)">bad</a> <a href="https://shop.test/orders/1">order</a>',
        '<iframe src="https://evil.test"></iframe><style>body{display:none}</style>',
      ].join(''),
      headers: { 'Message-ID': '<alice-1@customer.test>', Date: 'Sun, 22 Nov 2026 10:00:00 +0000' },
      attachments: [attachment('invoice.pdf', 1200), attachment('photo.pdf', 800)],
    });
    const acknowledged = await org.notify(provider.receivedEvent(received.id));
    expect(acknowledged.status).toBe(200);
    expect(await acknowledged.json()).toMatchObject({ received: true, status: 'accepted', notificationId: expect.any(String) });

    const reply = await provider.waitFor(customer);
    expect(reply.from).toBe(`"Help desk" <${org.inbox.emailAddress}>`);
    expect(reply.subject).toBe('Re: Order help');
    expect(reply.headers).toMatchObject({ 'In-Reply-To': '<alice-1@customer.test>', References: '<alice-1@customer.test>' });
    expect(reply.headers!['Message-ID']).toMatch(new RegExp(`^<[\\w-]+@${org.domain.replaceAll('.', '\\.')}>$`));
    expect(reply.html).toContain('<strong>Thanks</strong>');
    expect(reply.text).toBe('**Thanks**, we are on it.');
    expect(reply.idempotencyKey).toMatch(/^[\w-]+\/call_\w+$/);
    // The agent saw the thread as text, its sender and subject.
    const first = model.requests.find((request) => eventData(request).from === customer)!;
    expect(eventData(first)).toMatchObject({ inbox: org.inbox.emailAddress, subject: 'Order help' });
    expect(eventData(first).messages).toEqual([
      expect.objectContaining({ direction: 'received', text: 'Where is my order?', attachments: ['invoice.pdf', 'photo.pdf'] }),
    ]);

    const { threads } = await (await org.api('GET', '/email/threads')).json();
    expect(threads).toEqual([
      expect.objectContaining({
        subject: 'Order help',
        inboxId: org.inbox.id,
        startedBy: `Alice <${customer}>`,
        messageCount: 2,
      }),
    ]);
    const thread = await eventually('the reply stored as sent', async () => {
      const body = await (await org.api('GET', `/email/threads/${threads[0].id}`)).json();
      return body.messages[1]?.status === 'sent' ? body : undefined;
    });
    const [inbound, outbound] = thread.messages;
    expect(inbound).toMatchObject({
      direction: 'inbound',
      from: `Alice <${customer}>`,
      messageId: 'alice-1@customer.test',
      subject: 'Order help',
      text: 'Where is my order?',
      sentAt: '2026-11-22T10:00:00.000Z',
      status: 'received',
      actionId: expect.any(String),
    });
    expect(inbound.statusDetail).toBe(`given to Support to answer (action ${inbound.actionId})`);
    expect(inbound.html).toContain('<b>my order</b>');
    expect(inbound.html).toContain('href="https://shop.test/orders/1"');
    expect(inbound.html).toContain('src="data:image/png;base64,iVBORw0KGgo="');
    for (const hostile of ['script', 'onclick', 'tracker.test', 'javascript:', 'iframe', 'style', 'display:none'])
      expect(inbound.html).not.toContain(hostile);
    expect(inbound.attachments).toEqual([
      expect.objectContaining({ filename: 'invoice.pdf', contentType: 'application/pdf', sizeBytes: 1200, status: 'stored' }),
      expect.objectContaining({ filename: 'photo.pdf', sizeBytes: 800, status: 'stored' }),
    ]);
    // Two requests to the provider's API for the email and both links: the listing carries every link.
    expect(
      provider.requests.filter((request) => request.url.includes(received.id)).map((request) => request.url.split('?')[0]),
    ).toEqual([`/emails/receiving/${received.id}`, `/emails/receiving/${received.id}/attachments`]);
    expect(outbound).toMatchObject({
      direction: 'outbound',
      inReplyTo: 'alice-1@customer.test',
      references: ['alice-1@customer.test'],
      providerEmailId: reply.id,
      subject: 'Re: Order help',
      actionId: inbound.actionId,
    });
    // The console's frame: the sanitized HTML as a page that runs nothing and loads nothing.
    const page = await org.api('GET', `/email/messages/${inbound.id}/html`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(
      "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'",
    );
    expect(page.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(await page.text()).toContain('<b>my order</b>');
    const outsider = await createTenant(app);
    expect(
      (await app.request('GET', `/orgs/${outsider.org.slug}/email/messages/${inbound.id}/html`, { token: outsider.token }))
        .status,
    ).toBe(404);
    expect((await app.request('GET', `/orgs/${org.auth.org}/email/messages/${inbound.id}/html`)).status).toBe(401);
    // A message without HTML shows its text, escaped.
    const plain = await org.api('GET', `/email/messages/${outbound.id}/html`);
    expect(await plain.text()).not.toContain('<script');
    const download = await org.api('GET', `/email/attachments/${inbound.attachments[0].id}`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toBe('attachment; filename=invoice.pdf');
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.alloc(1200, 'invoice.pdf'.length))).toBe(true);

    // The action shows in the ledger like a webhook's, from its email.
    const action = await waitForAction(app, org.auth, inbound.actionId, ['completed']);
    expect(action).toMatchObject({ eventType: 'email.received', externalId: received.id, source: 'email' });
    expect(action.execution.toolCalls).toEqual([
      expect.objectContaining({ toolName: 'sendEmail', mode: 'allow', status: 'completed' }),
    ]);
  });

  it('threads a reply through References after the provider rewrote our Message-ID, and answers it in the same thread', async () => {
    model.script(replyToSender('Second answer.'));
    const org = await setUpEmailOrg(app, provider);
    const customer = `bob-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    const first = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Refund', text: 'Refund please' });
    await org.notify(provider.receivedEvent(first.id));
    const ourReply = await provider.waitFor(customer);
    // The provider sent it under its own Message-ID, not ours; the customer's client quotes only that one.
    expect(ourReply.messageId).not.toBe(ourReply.headers!['Message-ID']);
    const { threads } = await (await org.api('GET', '/email/threads')).json();
    await eventually('the provider Message-ID learnt', async () => {
      const thread = await (await org.api('GET', `/email/threads/${threads[0].id}`)).json();
      return thread.messages[1]?.providerMessageId === ourReply.messageId.slice(1, -1) ? thread : undefined;
    });

    const answered = provider.sent.length;
    const second = provider.receive({
      from: customer,
      to: [org.inbox.emailAddress],
      subject: 'Re: Refund',
      text: 'Thanks, and when?',
      headers: { 'In-Reply-To': ourReply.messageId, References: `${first.messageId} ${ourReply.messageId}` },
    });
    expect((await org.notify(provider.receivedEvent(second.id))).status).toBe(200);
    await eventually('a second reply', () => (provider.sent.length > answered ? true : undefined));
    const thread = await eventually('the thread with four messages', async () => {
      const body = await (await org.api('GET', `/email/threads/${threads[0].id}`)).json();
      return body.messages.length === 4 && body.messages[3].status === 'sent' ? body : undefined;
    });
    expect(thread.messages.map((message: { direction: string }) => message.direction)).toEqual([
      'inbound',
      'outbound',
      'inbound',
      'outbound',
    ]);
    expect((await (await org.api('GET', '/email/threads')).json()).threads).toHaveLength(1);
    const secondReply = provider.sent.at(-1)!;
    expect(secondReply.subject).toBe('Re: Refund');
    expect(secondReply.headers!['In-Reply-To']).toBe(`<${second.messageId.slice(1, -1)}>`);
    expect(secondReply.headers!.References).toBe(`${first.messageId} ${ourReply.messageId} ${second.messageId}`);
    // The agent read the whole thread, oldest first.
    const request = model.requests.findLast((candidate) => eventData(candidate).from === customer)!;
    expect(eventData(request).messages.map((message: { text: string }) => message.text)).toEqual([
      'Refund please',
      'Second answer.',
      'Thanks, and when?',
    ]);
  });

  it('processes a notification delivered twice (same svix-id) once', async () => {
    model.script(replyToSender());
    const org = await setUpEmailOrg(app, provider);
    const customer = `carol-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    const received = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Twice', text: 'Hello' });
    const svixId = `msg_${crypto.randomUUID()}`;
    const firstTime = await (await org.notify(provider.receivedEvent(received.id), { svixId })).json();
    const secondTime = await org.notify(provider.receivedEvent(received.id), { svixId });
    expect(secondTime.status).toBe(200);
    expect(await secondTime.json()).toEqual({ received: true, status: 'duplicate', notificationId: firstTime.notificationId });
    await provider.waitFor(customer);
    const { threads } = await (await org.api('GET', '/email/threads')).json();
    const thread = await (await org.api('GET', `/email/threads/${threads[0].id}`)).json();
    expect(thread.messages.filter((message: { direction: string }) => message.direction === 'inbound')).toHaveLength(1);
    expect(provider.sent.filter((email) => email.to.includes(customer))).toHaveLength(1);
  });

  it('stores and answers an email notified twice under two svix-ids once; the second is processed as stored already', async () => {
    model.script(replyToSender());
    const org = await setUpEmailOrg(app, provider);
    const customer = `dave-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    const received = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Again', text: 'Hi' });
    const first = await (await org.notify(provider.receivedEvent(received.id))).json();
    await provider.waitFor(customer);
    const second = await (await org.notify(provider.receivedEvent(received.id))).json();
    expect(second.notificationId).not.toBe(first.notificationId);
    const settled = await eventually('the second notification settled', async () => {
      const row = await app.container.database.db
        .selectFrom('emailNotifications')
        .select(['status', 'reason'])
        .where('id', '=', second.notificationId)
        .executeTakeFirstOrThrow();
      return row.status === 'received' ? undefined : row;
    });
    expect(settled).toEqual({ status: 'processed', reason: 'the email was stored already' });
    const { threads } = await (await org.api('GET', '/email/threads')).json();
    expect(threads).toHaveLength(1);
    expect(provider.sent.filter((email) => email.to.includes(customer))).toHaveLength(1);
  });

  it('never answers automatic mail, lists, bounces or our own addresses: stored, shown in the ledger as skipped with the reason', async () => {
    model.script(replyToSender());
    const org = await setUpEmailOrg(app, provider);
    const other = await setUpEmailOrg(app, provider, { autoRespond: false });
    const cases: Array<{ from: string; headers: Record<string, string>; reason: string }> = [
      {
        from: 'ooo@customer.test',
        headers: { 'Auto-Submitted': 'auto-replied' },
        reason: 'it was sent automatically (Auto-Submitted: auto-replied)',
      },
      { from: 'news@customer.test', headers: { Precedence: 'bulk' }, reason: 'it is bulk mail (Precedence)' },
      {
        from: 'list@customer.test',
        headers: { 'List-Id': '<team.lists.customer.test>' },
        reason: 'it came through a mailing list',
      },
      {
        from: 'MAILER-DAEMON@customer.test',
        headers: {},
        reason: 'its sender (mailer-daemon@customer.test) does not take replies',
      },
      { from: 'no-reply@customer.test', headers: {}, reason: 'its sender (no-reply@customer.test) does not take replies' },
      { from: other.inbox.emailAddress, headers: {}, reason: 'it was sent from one of our own addresses' },
    ];
    for (const [index, { from, headers }] of cases.entries()) {
      const received = provider.receive({
        from,
        to: [org.inbox.emailAddress],
        subject: `Guard ${index}`,
        text: 'Automatic',
        headers,
      });
      expect((await org.notify(provider.receivedEvent(received.id))).status).toBe(200);
    }
    const rows = await eventually('every email in the ledger', async () => {
      const body = await (await org.api('GET', '/ledger?source=email')).json();
      return body.rows.length === cases.length ? body.rows : undefined;
    });
    expect(rows.map((row: { reason: string }) => row.reason).sort()).toEqual(
      cases.map(({ reason }) => `not answered automatically: ${reason}`).sort(),
    );
    expect(
      rows.every(
        (row: { kind: string; status: string; source: string }) =>
          row.kind === 'delivery' && row.status === 'skipped' && row.source === 'email',
      ),
    ).toBe(true);
    expect((await (await org.api('GET', '/email/threads')).json()).threads).toHaveLength(cases.length);
    expect(provider.sent.filter((email) => cases.some(({ from }) => email.to.includes(from.toLowerCase())))).toEqual([]);
  });

  it('answers a thread at most the configured number of times an hour', async () => {
    model.script(replyToSender());
    const org = await setUpEmailOrg(app, provider);
    const customer = `loop-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    const first = provider.receive({ from: customer, to: [org.inbox.emailAddress], subject: 'Loop', text: 'Ping 0' });
    await org.notify(provider.receivedEvent(first.id));
    for (let index = 1; index <= 3; index++) {
      await eventually(`reply ${index}`, () =>
        provider.sent.filter((email) => email.to.includes(customer)).length === index ? true : undefined,
      );
      const next = provider.receive({
        from: customer,
        to: [org.inbox.emailAddress],
        subject: 'Re: Loop',
        text: `Ping ${index}`,
        headers: { 'In-Reply-To': first.messageId, References: first.messageId },
      });
      await org.notify(provider.receivedEvent(next.id));
    }
    const rows = await eventually('four emails in the ledger', async () => {
      const body = await (await org.api('GET', '/ledger?source=email')).json();
      return body.rows.length === 4 &&
        body.rows.every((row: { status: string }) => row.status !== 'queued' && row.status !== 'running')
        ? body.rows
        : undefined;
    });
    expect(rows[0]).toMatchObject({
      status: 'skipped',
      reason: 'not answered automatically: the thread had 3 automatic replies within the hour (the limit)',
    });
    expect(provider.sent.filter((email) => email.to.includes(customer))).toHaveLength(3);
  });

  it("asks for each attachment's link on its own when the listing of them fails", async () => {
    model.script(() => ({ text: 'Nothing to send.' }));
    const org = await setUpEmailOrg(app, provider);
    const received = provider.receive({
      from: 'Lin <lin@customer.test>',
      to: [org.inbox.emailAddress],
      subject: 'Three files',
      text: 'See attached.',
      attachments: [attachment('a.pdf', 10), attachment('b.pdf', 20), attachment('c.pdf', 30)],
    });
    provider.failNextListings(1);
    await org.notify(provider.receivedEvent(received.id));
    const message = await onlyStoredMessage(org);
    expect(message.attachments.map((stored: { status: string }) => stored.status)).toEqual(['stored', 'stored', 'stored']);
    const asked = provider.requests.filter((request) => request.url.includes(received.id)).map((request) => request.url);
    expect(asked.slice(0, 2).map((url) => url.split('?')[0])).toEqual([
      `/emails/receiving/${received.id}`,
      `/emails/receiving/${received.id}/attachments`,
    ]);
    const each = asked.slice(2);
    expect(each).toHaveLength(3);
    expect(new Set(each).size).toBe(3);
    for (const url of each) expect(url).toMatch(new RegExp(`^/emails/receiving/${received.id}/attachments/[\\w-]+$`));
  });

  it('keeps attachments over the limit out (recorded, not dropped) and bounds huge or malformed headers', async () => {
    model.script(() => ({ text: 'Nothing to send.' }));
    const org = await setUpEmailOrg(app, provider);
    const received = provider.receive({
      from: 'Grace <grace@customer.test>',
      to: [org.inbox.emailAddress],
      subject: 'Big one',
      html: '<p>Only <i>HTML</i> here</p>',
      headers: {
        'Message-ID': 'not-bracketed@customer.test',
        References: Array.from({ length: 5000 }, (_, index) => `<ref-${index}@customer.test>`).join(' '),
        'X-Huge': 'x'.repeat(100_000),
        Date: 'yesterday-ish',
      },
      attachments: [attachment('small.pdf', 100), attachment('large.pdf', 5000)],
    });
    await org.notify(provider.receivedEvent(received.id));
    const message = await onlyStoredMessage(org);
    expect(message.text).toBe('Only HTML here');
    expect(message.messageId).toBe('not-bracketed@customer.test');
    expect(message.references).toHaveLength(100);
    expect(message.references.at(-1)).toBe('ref-4999@customer.test');
    expect(message.headers['x-huge'].length).toBeLessThan(9000);
    // A Date header that is no date: the time the provider received it.
    expect(Math.abs(Date.parse(message.sentAt) - Date.now())).toBeLessThan(60_000);
    expect(message.attachments).toEqual([
      expect.objectContaining({ filename: 'small.pdf', status: 'stored', sizeBytes: 100 }),
      expect.objectContaining({
        filename: 'large.pdf',
        status: 'skipped',
        error: 'Not downloaded: over the limit of 4096 bytes',
        sizeBytes: 5000,
      }),
    ]);
    expect((await org.api('GET', `/email/attachments/${message.attachments[1].id}`)).status).toBe(404);
  });
});
