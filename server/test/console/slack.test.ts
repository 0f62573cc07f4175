import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, expectAccessible, launchBrowser, openConsole, signInToConsole, step } from '../helpers/browser.ts';
import { type FakeSlack, startFakeSlack } from '../helpers/fake-slack.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { setupWebhook } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let slack: FakeSlack;

beforeAll(async () => {
  slack = await startFakeSlack();
  app = await startTestApp({ SLACK_API_URL: slack.url }, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await slack?.close();
});

describe('the console: Slack', () => {
  it('connects the Slack app (a refused token saves nothing), sends a test message, and a rule posts in Slack', async () => {
    const setup = await setupWebhook(app);
    const { org, admin, token } = setup.tenant;
    const operator = await openConsole(browser);
    const { page } = operator;
    await signInToConsole(page, app.baseUrl, admin.email);
    await page.waitForURL('**/ledger');

    await step(page, 'a token Slack refuses saves nothing; the right one connects', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByText('Slack').click();
      const form = page.getByRole('form', { name: 'Connect a Slack app' });
      await form.getByLabel('Bot token').fill('xoxb-not-this-one');
      await form.getByLabel('Signing secret').fill('a1b2c3d4e5f60718293a4b5c6d7e8f90');
      await form.getByLabel('Channel').fill('C0APPROVALS');
      await form.getByRole('button', { name: 'Connect' }).click();
      // The refusal is a notice, as on every page, and stays until the next attempt succeeds.
      const refusal = page.getByRole('alert').filter({ hasText: 'Not connected' });
      await refusal.getByText('Slack refused the bot token: invalid_auth').waitFor();
      await capture(page, 'slack-refused');
      await form.getByLabel('Bot token').fill(slack.token);
      await form.getByRole('button', { name: 'Connect' }).click();
      await page.getByText('Workspace Acme · channel C0APPROVALS').waitFor();
      await refusal.waitFor({ state: 'hidden' });
      await page.getByRole('button', { name: 'Send a test message' }).click();
      await page.getByText('Test message posted').waitFor();
      // The fake workspace's bot has no history scope (approvals do not need it): the page says what that means.
      await page.getByText("the bot cannot read the channel's history", { exact: false }).waitFor();
      await page.mouse.move(600, 10);
      await expectAccessible(page, 'slack-connected');
      await capture(page, 'slack-connected');
    });
    expect(await page.content()).not.toContain(slack.token);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);

    await step(page, 'a new channel alone: the saved token and secret are kept', async () => {
      const form = page.getByRole('form', { name: 'Connect a Slack app' });
      expect(await form.getByLabel('Channel').inputValue()).toBe('C0APPROVALS');
      expect(await form.getByLabel('Bot token').inputValue()).toBe('');
      expect(await form.getByLabel('Bot token').getAttribute('placeholder')).toBe(
        `Saved (...${slack.token.slice(-4)}): leave empty to keep it`,
      );
      await form.getByLabel('Channel').fill('C0OTHERS');
      await form.getByRole('button', { name: 'Connect' }).click();
      await page.getByText('Workspace Acme · channel C0OTHERS').waitFor();
    });
    const moved = await app.request('PUT', `/orgs/${org.slug}/slack`, { token, body: { channel: 'C0APPROVALS' } });
    expect(await moved.json()).toMatchObject({ channel: 'C0APPROVALS', botTokenHint: `...${slack.token.slice(-4)}` });

    await step(page, 'the rule form turns on "Post in Slack"', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/agents`);
      await page.getByRole('table', { name: 'Action rules' }).getByRole('button', { name: 'Edit' }).first().click();
      const dialog = page.getByRole('dialog', { name: 'Edit action rule' });
      await dialog.getByRole('switch', { name: 'Post in Slack when a call waits' }).check();
      await dialog.getByRole('button', { name: 'Save rule' }).click();
      await dialog.waitFor({ state: 'hidden' });
    });
    const rule = await (await app.request('GET', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, { token })).json();
    expect(rule.notify).toEqual(['slack']);
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});
