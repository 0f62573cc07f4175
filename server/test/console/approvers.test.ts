import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../helpers/actions.ts';
import { capture, expectAccessible, launchBrowser, openConsole, signInToConsole, step } from '../helpers/browser.ts';
import { auth, runEvent } from '../helpers/callbacks.ts';
import { createUser } from '../helpers/factories.ts';
import { documentThenText, startFakeModel } from '../helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { setupWebhook } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let model: Awaited<ReturnType<typeof startFakeModel>>;

beforeAll(async () => {
  model = await startFakeModel();
  model.script(documentThenText());
  app = await startTestApp(model.env, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await model?.close();
});

describe('the console: deciding', () => {
  it('a Guest the rule names opens the approvals inbox and approves the call', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    const { org, token } = setup.tenant;
    const guest = await createUser(app, { role: 'Guest', org: org.slug });
    await app.request('PATCH', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, {
      token,
      body: { approvers: { userIds: [guest.id] } },
    });
    // A direction override in a title would show "fdp.exe" as "exe.pdf".
    model.script(
      documentThenText({ title: 'invoice\u202efdp.exe', content: '# Order 42\n\n| sku | qty |\n|---|---|\n| A-1 | 2 |' }),
    );
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    model.script(documentThenText());

    const visitor = await openConsole(browser);
    const { page } = visitor;
    await signInToConsole(page, app.baseUrl, guest.email);
    await page.waitForURL('**/documents');

    await step(page, 'the inbox shows the call the rule names the Guest for, and the Guest approves it', async () => {
      const navigation = page.getByRole('navigation', { name: 'Pages' });
      expect(await navigation.getByText('Ledger').count()).toBe(0);
      await navigation.getByText('Approvals').click();
      const row = page.getByRole('table', { name: 'Pending approvals' }).getByRole('row').filter({ hasText: 'generateDocument' });
      await row.waitFor();
      // Every character of the arguments is in view: a long line wraps, none hides past the column's edge,
      // and a character that reorders the text is shown as its escape.
      const input = row.getByLabel('Input of generateDocument');
      expect(await input.evaluate((block) => [block.scrollWidth <= block.clientWidth, block.textContent])).toEqual([
        true,
        expect.stringMatching(/"title": "invoice\\u202efdp\.exe"[\s\S]*\| A-1 \| 2 \|/),
      ]);
      await page.mouse.move(600, 10); // not hovering the link just clicked
      await expectAccessible(page, 'guest-approvals');
      await capture(page, 'guest-approvals');
      await row.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('Nothing waits for a decision.').waitFor();
    });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({ approval: 'approved', channel: 'console', approverId: guest.id });
    await step(page, 'the Guest finds the document, without a link to the ledger it may not read', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByText('Documents').click();
      const table = page.getByRole('table', { name: 'Documents' });
      await table.getByRole('link', { name: 'invoice\u202efdp.exe' }).waitFor();
      expect(await table.getByRole('columnheader').allTextContents()).toEqual(['Title', 'Size', 'Created']);
    });
    visitor.expectNoProblems();
    await visitor.close();
  }, 120_000);

  it('an admin edits the arguments and approves: the server refuses what the tool cannot take, the ledger shows the change', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    const { org, admin } = setup.tenant;
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const operator = await openConsole(browser);
    const { page } = operator;
    await signInToConsole(page, app.baseUrl, admin.email);
    await page.waitForURL('**/ledger');

    await step(page, 'edit the call in the inbox; a refused edit keeps it waiting; an accepted one runs', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/approvals`);
      await page.getByRole('button', { name: 'Edit the arguments of generateDocument' }).click();
      // One field per argument, from the tool's schema, filled with the model's.
      const dialog = page.getByRole('dialog', { name: 'Edit and approve generateDocument' });
      expect(await dialog.getByLabel('title').inputValue()).toBe('Order 42');
      await dialog.getByLabel('title').fill('Order 42 (edited)');
      await dialog.getByLabel('content').fill('');
      await dialog.getByRole('button', { name: 'Approve with these arguments' }).click();
      await dialog.getByRole('alert').filter({ hasText: 'body/arguments/content' }).waitFor();
      await dialog.getByLabel('content').fill('# Edited');
      await dialog.getByLabel('Why (optional)').fill('The order is 42, not 41');
      await page.mouse.move(600, 10); // not hovering the button just clicked
      await expectAccessible(page, 'edit-and-approve');
      await capture(page, 'edit-and-approve');
      await dialog.getByRole('button', { name: 'Approve with these arguments' }).click();
      await dialog.waitFor({ state: 'hidden' });
    });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.execution.toolCalls[0]).toMatchObject({
      approvedInput: { title: 'Order 42 (edited)', content: '# Edited' },
      channel: 'console',
      reason: 'The order is 42, not 41',
    });
    await step(page, 'the ledger shows what the model proposed, what ran and why', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${actionId}`);
      const edited = page.getByRole('group', { name: 'Edited input of generateDocument' });
      await edited.getByText('title: "Order 42" → "Order 42 (edited)"').waitFor();
      await page.getByText('The order is 42, not 41').waitFor();
      // What the tool returned shows whole too: the document's id wraps within its column.
      const output = page.getByLabel('Output of generateDocument');
      expect(await output.evaluate((block) => [block.scrollWidth <= block.clientWidth, block.textContent])).toEqual([
        true,
        expect.stringMatching(/"documentId": "[0-9a-f-]{36}"/),
      ]);
      await capture(page, 'ledger-edited-call');
      // The document it wrote downloads from the call: the PDF, with the title the approver gave it.
      const href = await page.getByRole('link', { name: 'Download the document' }).getAttribute('href');
      const pdf = await page.request.get(`${app.baseUrl}${href}`);
      expect([pdf.status(), pdf.headers()['content-type'], pdf.headers()['content-disposition']]).toEqual([
        200,
        'application/pdf',
        'attachment; filename="Order 42 (edited).pdf"',
      ]);
    });
    await step(page, 'the documents page leads back to the action that wrote each document', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByText('Documents').click();
      const row = page.getByRole('table', { name: 'Documents' }).getByRole('row').filter({ hasText: 'Order 42 (edited)' });
      await row.getByRole('link', { name: "Helper's action" }).waitFor();
      await capture(page, 'documents');
      await row.getByRole('link', { name: "Helper's action" }).click();
      await page.waitForURL(`**/o/${org.slug}/ledger/${actionId}`);
      await page.getByRole('group', { name: 'Edited input of generateDocument' }).waitFor();
    });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);

  it('an admin sends a call back with guidance: it does not run, the agent goes on, the ledger says so', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    const { org, admin } = setup.tenant;
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const operator = await openConsole(browser);
    const { page } = operator;
    await signInToConsole(page, app.baseUrl, admin.email);
    await page.waitForURL('**/ledger');
    await step(page, 'send back from the ledger row', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${actionId}`);
      await page.getByRole('button', { name: 'Send back generateDocument' }).click();
      const dialog = page.getByRole('dialog', { name: 'Send back generateDocument' });
      await dialog.getByLabel('What the agent should do instead').fill('No PDF: answer in text.');
      await capture(page, 'send-back');
      await dialog.getByRole('button', { name: 'Send back' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await page.getByText('No PDF: answer in text.').first().waitFor();
    });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({ status: 'sent_back', approval: 'sent_back', channel: 'console' });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);

  it('two approvals: the rule form asks for 2; one admin edits and says why ("1 of 2 approvals"), the other sees it and runs the call', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    const { org, admin } = setup.tenant;
    const second = await createUser(app, { role: 'Admin', org: org.slug });
    const first = await openConsole(browser);
    await signInToConsole(first.page, app.baseUrl, admin.email);
    await first.page.waitForURL('**/ledger');

    await step(first.page, 'the rule form sets "Approvals needed" to 2', async () => {
      const { page } = first;
      await page.goto(`${app.baseUrl}/o/${org.slug}/agents`);
      await page.getByRole('table', { name: 'Action rules' }).getByRole('button', { name: 'Edit' }).first().click();
      const dialog = page.getByRole('dialog', { name: 'Edit action rule' });
      await dialog.getByLabel('Approvals needed').fill('2');
      await capture(page, 'rule-min-approvals');
      await dialog.getByRole('button', { name: 'Save rule' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await page.getByRole('table', { name: 'Action rules' }).getByText("the org's admins; 2 approvals per call").waitFor();
    });
    const rule = await (
      await app.request('GET', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, { token: setup.tenant.token })
    ).json();
    expect(rule.minApprovals).toBe(2);

    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);
    const other = await openConsole(browser);
    await signInToConsole(other.page, app.baseUrl, second.email);
    await other.page.waitForURL('**/ledger');
    await other.page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${actionId}`);
    await other.page.getByRole('button', { name: 'Approve generateDocument' }).waitFor();
    await step(first.page, 'the first approval leaves the call waiting: "1 of 2 approvals", "You approved"', async () => {
      const { page } = first;
      await page.goto(`${app.baseUrl}/o/${org.slug}/approvals`);
      const row = page.getByRole('table', { name: 'Pending approvals' }).getByRole('row').filter({ hasText: 'generateDocument' });
      await row.getByRole('button', { name: 'Edit the arguments of generateDocument' }).click();
      const dialog = page.getByRole('dialog', { name: 'Edit and approve generateDocument' });
      await dialog.getByLabel('title').fill('Order 42, approved');
      await dialog.getByLabel('Why (optional)').fill('Say that it is approved');
      await dialog.getByRole('button', { name: 'Approve with these arguments' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await row.getByText('1 of 2 approvals').waitFor();
      await row.getByRole('button', { name: 'You approved generateDocument' }).waitFor();
      expect(await row.getByRole('button', { name: 'You approved generateDocument' }).isDisabled()).toBe(true);
      await page.mouse.move(600, 10);
      await expectAccessible(page, 'one-of-two-approvals');
      await capture(page, 'one-of-two-approvals');
    });
    expect((await waitForAction(app, auth(setup), actionId, ['pending_approval'])).execution.toolCalls[0].status).toBe('staged');

    await step(other.page, 'the second admin, on the ledger row, sees 1 of 2 live and approves there', async () => {
      const { page } = other;
      const approvals = page.getByRole('group', { name: 'Approvals' });
      await approvals.getByText('1 of 2 approvals').waitFor();
      await approvals.getByText(`approved by ${admin.email} (edited)`).waitFor();
      await approvals.getByText('“Say that it is approved”').waitFor();
      await page.getByRole('button', { name: 'Approve generateDocument' }).click();
      await approvals.getByText('2 of 2 approvals').waitFor();
      await capture(page, 'two-of-two-approvals');
    });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({
      approval: 'approved',
      channel: 'console',
      approverId: second.id,
      approvedInput: { title: 'Order 42, approved' },
    });
    expect(done.execution.toolCalls[0].approvals.map((given: { approverId: string }) => given.approverId)).toEqual([
      admin.id,
      second.id,
    ]);
    first.expectNoProblems();
    other.expectNoProblems();
    await first.close();
    await other.close();
  }, 120_000);
});
