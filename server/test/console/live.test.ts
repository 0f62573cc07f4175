import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { waitForAction } from '../helpers/actions.ts';
import { launchBrowser, openConsole, step } from '../helpers/browser.ts';
import { DEFAULT_PASSWORD } from '../helpers/factories.ts';
import { documentThenText, startFakeModel } from '../helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { postEvent, setupWebhook } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let model: Awaited<ReturnType<typeof startFakeModel>>;

beforeAll(async () => {
  model = await startFakeModel();
  model.script(documentThenText());
  app = await startTestApp({ ...model.env }, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await model?.close();
});

describe('the console stays current', () => {
  it('shows a change that happened while the page was reading the row it changed', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    const slug = setup.tenant.org.slug;
    const { actionId } = await (await postEvent(app, setup, { eventType: 'invoice.requested', externalId: 'read-held' })).json();
    await waitForAction(app, { token: setup.tenant.token, org: slug }, actionId, ['pending_approval']);
    const [{ toolCallId }] = (await (await app.request('GET', `/orgs/${slug}/approvals`, { token: setup.tenant.token })).json())
      .approvals;

    const operator = await openConsole(browser);
    const { page } = operator;
    await step(page, 'sign in to the ledger, live', async () => {
      await page.goto(`${app.baseUrl}/o/${slug}/ledger`);
      await page.getByLabel('Email').fill(setup.tenant.admin.email);
      await page.getByLabel('Password', { exact: true }).fill(DEFAULT_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('row').filter({ hasText: 'read-held' }).waitFor();
      await page.locator('[data-live-state="live"]').waitFor();
    });

    // The row's first read is answered only after the action was rejected and the page was told so.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let readDone!: () => void;
    const read = new Promise<void>((resolve) => (readDone = resolve));
    await page.route(
      `**/orgs/${slug}/ledger/${actionId}`,
      async (route) => {
        const response = await route.fetch();
        readDone();
        await answered;
        await route.fulfill({ response });
      },
      { times: 1 },
    );
    await page.getByRole('row').filter({ hasText: 'read-held' }).click();
    await read;
    // The stream's change refetches the inbox (the navigation's count) with the row: then the page has taken it in.
    const inboxRefetched = page.waitForRequest((request) => request.url().includes(`/orgs/${slug}/approvals`));
    const rejected = await app.request('POST', `/orgs/${slug}/actions/${actionId}/tool-calls/${toolCallId}/reject`, {
      token: setup.tenant.token,
      body: { reason: 'not now' },
    });
    if (rejected.status !== 200) throw new Error(`reject answered ${rejected.status}`);
    await inboxRefetched;
    answer();

    await step(page, 'the row shows the rejection, not the read that began before it', () =>
      page.getByRole('heading', { level: 1 }).filter({ hasText: 'rejected' }).waitFor(),
    );
    operator.expectNoProblems();
    await operator.close();
  });
});
