import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, launchBrowser, openConsole, step } from '../helpers/browser.ts';
import { type FakeMailProvider, setUpEmailOrg } from '../helpers/email.ts';
import { startFakeMailProvider } from '../helpers/fake-mail-provider.ts';
import { type ChatRequest, calledTools, eventData, startFakeModel } from '../helpers/fake-model.ts';
import { createUser, DEFAULT_PASSWORD } from '../helpers/factories.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';

let app: TestApp;
let browser: Browser;
let provider: FakeMailProvider;
let model: Awaited<ReturnType<typeof startFakeModel>>;

beforeAll(async () => {
  provider = await startFakeMailProvider();
  model = await startFakeModel();
  app = await startTestApp({ ...model.env, MAIL_API_URL: provider.url, MAIL_API_RETRIES: '0' }, { serveConsole: true });
  browser = await launchBrowser();
  // The inbox's agent answers each email to its sender.
  model.script((request: ChatRequest) =>
    calledTools(request)
      ? { text: 'Replied.' }
      : { toolCalls: [{ name: 'sendEmail', arguments: { to: eventData(request).from, subject: 'x', body: 'We are on it.' } }] },
  );
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await model?.close();
  await provider?.close();
});

describe('the console: email', () => {
  it('shows a thread with its sanitized HTML in a sandboxed frame that loads nothing, tests the integration before saving, and changes its sender alone', async () => {
    const org = await setUpEmailOrg(app, provider, { agentTools: ['sendEmail'] });
    const customer = `bob-${crypto.randomUUID().slice(0, 6)}@customer.test`;
    const received = provider.receive({
      from: `Bob <${customer}>`,
      to: [org.inbox.emailAddress],
      subject: 'Where is my parcel?',
      text: 'Where is my parcel?',
      html: '<p>Where is <b>my parcel</b>?</p><img src="https://tracker.test/open.gif"><script>parent.alert(1)</script>',
      headers: { 'Message-ID': '<bob-1@customer.test>' },
      attachments: [{ filename: 'label.pdf', contentType: 'application/pdf', content: Buffer.alloc(300, 1) }],
    });
    expect((await org.notify(provider.receivedEvent(received.id))).status).toBe(200);
    await provider.waitFor(customer);

    const operator = await openConsole(browser);
    const { page } = operator;
    const outside: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(app.baseUrl) && !request.url().startsWith('data:')) outside.push(request.url());
    });
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByLabel('Email').fill(org.admin.email);
    await page.getByLabel('Password', { exact: true }).fill(DEFAULT_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/ledger');

    await step(page, 'open the thread', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Email' }).click();
      await page.getByRole('link', { name: 'Where is my parcel?' }).waitFor();
      // Who wrote: the customer's From, as the first message has it.
      await page
        .getByRole('row', { name: /Where is my parcel\?/ })
        .getByText(`Bob <${customer}>`)
        .waitFor();
      await capture(page, 'email-threads');
      await page.getByRole('link', { name: 'Where is my parcel?' }).click();
      await page.locator('[data-message-id]').nth(1).waitFor();
      const frame = page.locator('iframe').first();
      expect(await frame.getAttribute('sandbox')).toBe('');
      await page.frameLocator('iframe').first().getByText('my parcel').waitFor();
      // A long message is read whole by dragging the frame's corner: 200 pixels down, 200 pixels taller.
      const frameBox = page.locator('[data-message-frame]').first();
      await frameBox.scrollIntoViewIfNeeded();
      const before = (await frameBox.boundingBox())!;
      await page.mouse.move(before.x + before.width - 3, before.y + before.height - 3);
      await page.mouse.down();
      await page.mouse.move(before.x + before.width - 3, before.y + before.height + 197, { steps: 5 });
      await page.mouse.up();
      expect(Math.round((await frameBox.boundingBox())!.height - before.height)).toBe(200);
      // Its attachment with its size as stored: 300 bytes, not "1 KB".
      await page.getByRole('link', { name: 'label.pdf (300 bytes)' }).waitFor();
      await capture(page, 'email-thread');
    });
    expect(outside).toEqual([]);

    await step(page, 'test the integration, then save it', async () => {
      await page.getByRole('link', { name: '← Email' }).click();
      await page.getByRole('tab', { name: 'Integration' }).click();
      await page.getByLabel('API key').fill('re_not_a_key_of_the_provider');
      await page.getByLabel('From email').fill(`agents@${org.domain}`);
      await page.getByLabel('Webhook secret').fill(org.webhook.secret);
      await page.getByRole('button', { name: 'Test connection' }).click();
      await page.getByText('Connection test failed').waitFor();
      expect(await page.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
      await page.getByLabel('API key').fill(org.apiKey);
      await page.getByRole('button', { name: 'Test connection' }).click();
      await page.getByText('Connection works').waitFor();
      await capture(page, 'email-integration');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Email integration saved').waitFor();
    });

    await step(page, 'change the sender alone: the saved key and secret are kept', async () => {
      // The form holds the sender as saved; the key and the secret fields are empty, and say so.
      expect(await page.getByLabel('From email').inputValue()).toBe(`agents@${org.domain}`);
      expect(await page.getByLabel('API key').inputValue()).toBe('');
      expect(await page.getByLabel('API key').getAttribute('placeholder')).toMatch(
        /^Saved \(\.\.\..{4}\): leave empty to keep it$/,
      );
      await page.getByLabel('From name').fill('Help team');
      await page.getByRole('button', { name: 'Test connection' }).click();
      await page.getByText('Connection works').waitFor();
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText(`From: Help team <agents@${org.domain}>`).waitFor();
    });
    const kept = await app.container.db
      .selectFrom('emailIntegrations')
      .selectAll()
      .where('orgId', '=', org.org.id)
      .executeTakeFirstOrThrow();
    expect(app.container.box.decrypt(kept.apiKeyEncrypted)).toBe(org.apiKey);
    expect(app.container.box.decrypt(kept.webhookSecretEncrypted)).toBe(org.webhook.secret);

    const quoter = await (await org.api('POST', '/agents', { name: 'Quoter', instructions: 'Quote.', tools: [] })).json();
    const lead = await createUser(app, { role: 'Guest', org: org.org.slug });
    await step(page, 'inboxes: an agent assigned, and who decides its calls', async () => {
      await page.getByRole('tab', { name: 'Inboxes' }).click();
      await page.getByText(org.inbox.emailAddress).waitFor();
      // A second agent, whose waiting calls email the approvers.
      await page.getByLabel('Assign an agent').first().click();
      await page.getByRole('option', { name: 'Quoter' }).click();
      await page.getByRole('button', { name: 'Assign', exact: true }).click();
      const assigning = page.getByRole('dialog', { name: 'Assign Quoter to Help desk' });
      await assigning.getByRole('switch', { name: 'Answers every email' }).uncheck();
      await assigning.getByRole('switch', { name: 'Email the approvers when a call waits' }).check();
      // Its replies go out on their own, but one that attaches a document waits for a human.
      const sendMode = assigning.getByRole('radiogroup', { name: 'Approval mode of sendEmail' });
      await sendMode.waitFor();
      expect(await sendMode.getByRole('radio', { name: 'allow' }).isChecked()).toBe(true);
      // Quoter has no tools of its own: on an inbox it can only answer, so sendEmail is the one tool listed.
      const listed = assigning.getByRole('table', { name: 'Approval per tool' }).getByRole('radiogroup');
      expect(await listed.count()).toBe(1);
      await assigning.getByRole('button', { name: 'Add argument rule' }).click();
      const argumentRule = assigning.getByRole('group', { name: 'Argument rule 1' });
      await argumentRule.getByLabel('Tool').click();
      await page.getByRole('option', { name: 'sendEmail' }).click();
      await argumentRule.getByLabel('Path').fill('attachDocumentIds');
      await assigning.getByRole('button', { name: 'Save assignment' }).click();
      await argumentRule.getByText('A JSON Pointer, such as /amount').waitFor();
      await argumentRule.getByLabel('Path').fill('/attachDocumentIds');
      expect(await argumentRule.getByLabel('Value').getAttribute('placeholder')).toBe('100');
      await argumentRule.getByLabel('Operator').click();
      await page.getByRole('option', { name: 'exists' }).click();
      // The value field shows what the operator takes.
      expect(await argumentRule.getByLabel('Value').getAttribute('placeholder')).toBe('none, or false');
      await capture(page, 'email-assignment-argument-rule');
      await assigning.getByRole('button', { name: 'Save assignment' }).click();
      await assigning.waitFor({ state: 'hidden' });
      const row = page.locator('[data-assignment="Quoter"]');
      await row.getByText('emails the approvers').waitFor();
      await row.getByText("decided by the org's admins").waitFor();
      await row.getByText('sendEmail: allow').waitFor();
      await row.getByText('1. sendEmail: /attachDocumentIds exists → ask').waitFor();

      // The lead decides its calls, two approvals each: refused while the lead is the only approver.
      await row.getByRole('button', { name: 'Edit' }).click();
      const editing = page.getByRole('dialog', { name: 'Quoter on Help desk' });
      await editing.getByRole('checkbox', { name: 'Every admin of the organization' }).uncheck();
      // Nobody left to decide: the form says so before anything is sent.
      await editing.getByRole('button', { name: 'Save assignment' }).click();
      await editing.getByText('Choose who decides').waitFor();
      await editing.getByPlaceholder('Add members').click();
      await page.getByRole('option', { name: lead.email }).click();
      await editing.getByLabel('Approvals needed').fill('2');
      await editing.getByRole('button', { name: 'Save assignment' }).click();
      await page.getByText('2 approvals needed, but the approvers are 1 member').waitFor();
      await capture(page, 'email-assignment-refused');
      await editing.getByRole('checkbox', { name: 'Every admin of the organization' }).check();
      await editing.getByRole('button', { name: 'Save assignment' }).click();
      await editing.waitFor({ state: 'hidden' });
      await row.getByText(`decided by ${lead.email} and the org's admins; 2 approvals per call`).waitFor();
      // The refusal went with the success of the same form.
      await page.getByText('2 approvals needed').waitFor({ state: 'hidden' });
      await capture(page, 'email-inboxes');
    });
    await step(page, 'suppressions', async () => {
      await page.getByRole('tab', { name: 'Suppressions' }).click();
      await page.getByText('No suppressed addresses.').waitFor();
      await capture(page, 'email-suppressions');
    });

    await step(page, 'an answer that waits: the approvals inbox says which email it answers', async () => {
      const assignment = `/email/inboxes/${org.inbox.id}/agents/${org.agentId}`;
      expect((await org.api('PATCH', assignment, { approvalRules: { sendEmail: 'ask' } })).status).toBe(200);
      const subject = 'Refund for order 7';
      await org.deliver({ from: 'Carol <carol@customer.test>', to: [org.inbox.emailAddress], subject, text: 'Please refund.' });
      await page
        .getByRole('navigation', { name: 'Pages' })
        .getByRole('link', { name: /^Approvals/ })
        .click();
      const row = page.getByRole('table', { name: 'Pending approvals' }).getByRole('row').filter({ hasText: 'sendEmail' });
      await row.getByText(`from Carol <carol@customer.test>: "${subject}"`).waitFor();
      await capture(page, 'approvals-email');
    });

    const { agents } = await (await org.api('GET', `/email/inboxes/${org.inbox.id}`)).json();
    expect(agents).toContainEqual(
      expect.objectContaining({
        agentId: quoter.id,
        autoRespond: false,
        notify: ['email'],
        approvers: { userIds: [lead.id], role: 'Admin' },
        minApprovals: 2,
        approvalRules: { sendEmail: 'allow' },
        argumentRules: [{ tool: 'sendEmail', path: '/attachDocumentIds', op: 'exists', mode: 'ask' }],
      }),
    );
    operator.expectNoProblems();
    await operator.close();
  }, 180_000);
});
