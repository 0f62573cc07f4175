import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../helpers/actions.ts';
import { capture, launchBrowser, openConsole, signInToConsole, step } from '../helpers/browser.ts';
import { auth, runEvent } from '../helpers/callbacks.ts';
import { DEFAULT_PASSWORD } from '../helpers/factories.ts';
import { startFakeModel } from '../helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { setupWebhook } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let model: Awaited<ReturnType<typeof startFakeModel>>;
const DAY = 86_400_000;

beforeAll(async () => {
  model = await startFakeModel();
  model.script(() => ({ text: 'Done.', usage: { prompt: 120_000, completion: 30_000 } }));
  app = await startTestApp(
    { ...model.env, MODEL_PRICES: JSON.stringify({ 'scripted-model': { input: 3, output: 15 } }) },
    { serveConsole: true },
  );
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await model?.close();
});

describe('the console: usage', () => {
  it('charts cost per day and per agent, shows the budgets and each action its own usage', async () => {
    const setup = await setupWebhook(app);
    const { token, org } = auth(setup);
    await app.request('PATCH', `/orgs/${org}/agents/${setup.agentId}`, {
      token,
      body: { budget: { period: 'month', maxCostUsd: 5, onExceed: 'pause' } },
    });
    // Two days of actions: one yesterday, two today. The budget counts this month (UTC): on the 1st,
    // yesterday's action was last month's, and only today's two ($1.62 of $5) count.
    const yesterdayThisMonth = new Date(app.clock.now().getTime() - DAY).getUTCMonth() === app.clock.now().getUTCMonth();
    app.clock.advance(-DAY);
    await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed']);
    app.clock.reset();
    const ids = [await runEvent(app, setup), await runEvent(app, setup)];
    for (const id of ids) await waitForAction(app, auth(setup), id, ['completed']);

    const { page } = await openConsole(browser);
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByLabel('Email').fill(setup.tenant.admin.email);
    await page.getByLabel('Password', { exact: true }).fill(DEFAULT_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/ledger');

    await step(page, 'the usage page', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Usage' }).click();
      const perAgent = page.getByRole('table', { name: 'Usage per agent' });
      // 3 calls × (120,000 × $3 + 30,000 × $15) per million = 3 × $0.81
      await perAgent.getByRole('row', { name: /Helper 3 450,000 \$2\.43/ }).waitFor();
      await page.getByText('Cost (USD) per day (UTC)').waitFor();
      expect(await page.locator('.recharts-bar-rectangle').count()).toBeGreaterThanOrEqual(3); // two days, one agent
      await page.getByRole('progressbar', { name: `Helper: ${yesterdayThisMonth ? 49 : 32}% used` }).waitFor();
      await capture(page, 'usage');
      await page.getByRole('radiogroup', { name: 'Measure' }).getByText('Tokens').click();
      await page.getByText('Tokens per agent').waitFor();
    });

    await step(page, "an action's ledger row shows its usage", async () => {
      await page.goto(`${app.baseUrl}/o/${org}/ledger/${ids[0]}`);
      await page.getByText('1 call, 150,000 tokens, $0.81').waitFor();
    });
  }, 90_000);

  it('charts tokens when no call in the range has a price: a cost chart would be empty axes', async () => {
    const setup = await setupWebhook(app);
    const { token, org } = auth(setup);
    const unpriced = await app.request('PATCH', `/orgs/${org}/agents/${setup.agentId}`, {
      token,
      body: { provider: 'openai-compatible', model: 'unpriced-model' },
    });
    expect(unpriced.status).toBe(200);
    await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed']);

    const visitor = await openConsole(browser);
    const { page } = visitor;
    await signInToConsole(page, app.baseUrl, setup.tenant.admin.email);
    await page.waitForURL('**/ledger');
    await step(page, 'the usage page charts tokens, and Cost cannot be chosen', async () => {
      await page.goto(`${app.baseUrl}/o/${org}/usage`);
      await page.getByText('Not counted: 1 call to models without a price').waitFor();
      await page.getByText('Tokens per day (UTC)').waitFor();
      await page.getByText('Tokens per agent').waitFor();
      expect(await page.getByText('Cost (USD) per day (UTC)').count()).toBe(0);
      expect(await page.getByRole('radiogroup', { name: 'Measure' }).getByRole('radio', { name: 'Cost' }).isDisabled()).toBe(
        true,
      );
      await capture(page, 'usage-unpriced');
    });
    visitor.expectNoProblems();
    await visitor.close();
  }, 90_000);
});
