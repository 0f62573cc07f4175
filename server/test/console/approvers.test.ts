import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../helpers/actions.ts';
import { capture, expectAccessible, launchBrowser, openConsole, step } from '../helpers/browser.ts';
import { auth, runEvent } from '../helpers/callbacks.ts';
import { createUser, DEFAULT_PASSWORD } from '../helpers/factories.ts';
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

describe('the console: approvers who are not admins', () => {
  it('a Guest the rule names opens the approvals inbox and approves the call', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    const { org, token } = setup.tenant;
    const guest = await createUser(app, { role: 'Guest', org: org.slug });
    await app.request('PATCH', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, {
      token,
      body: { approvers: { userIds: [guest.id] } },
    });
    const actionId = await runEvent(app, setup);
    await waitForAction(app, auth(setup), actionId, ['pending_approval']);

    const visitor = await openConsole(browser);
    const { page } = visitor;
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByLabel('Email').fill(guest.email);
    await page.getByLabel('Password', { exact: true }).fill(DEFAULT_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/documents');

    await step(page, 'the inbox shows the call the rule names the Guest for, and the Guest approves it', async () => {
      const navigation = page.getByRole('navigation', { name: 'Pages' });
      expect(await navigation.getByText('Ledger').count()).toBe(0);
      await navigation.getByText('Approvals').click();
      const row = page.getByRole('table', { name: 'Pending approvals' }).getByRole('row').filter({ hasText: 'generateDocument' });
      await row.waitFor();
      await page.mouse.move(600, 10); // not hovering the link just clicked
      await expectAccessible(page, 'guest-approvals');
      await capture(page, 'guest-approvals');
      await row.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('Nothing waits for a decision.').waitFor();
    });
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls[0]).toMatchObject({ approval: 'approved', channel: 'console', approverId: guest.id });
    visitor.expectNoProblems();
    await visitor.close();
  }, 120_000);
});
