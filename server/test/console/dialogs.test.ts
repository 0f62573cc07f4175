import type { Browser, Locator, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openConsole, signInToConsole, step } from '../helpers/browser.ts';
import { createTenant } from '../helpers/factories.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';

let app: TestApp;
let browser: Browser;

beforeAll(async () => {
  app = await startTestApp({}, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

/**
 * Holds the console's next POST to `path` in the browser until released: the save is then still
 * under way while the operator goes on, as on a slow network. It reaches the real server once released.
 */
async function holdNextPost(page: Page, path: string) {
  let holding = true;
  let heldRoute: (route: Route) => void = () => {};
  const held = new Promise<Route>((resolve) => {
    heldRoute = resolve;
  });
  await page.route(
    (url) => url.pathname === path,
    (route) => {
      if (!holding || route.request().method() !== 'POST') return route.fallback();
      holding = false;
      heldRoute(route);
    },
  );
  return {
    /** Once the request is held, the operator closes `dialog` (Escape) while it waits. */
    closeWhileHeld: async (dialog: Locator) => {
      await held;
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
    },
    release: async () => (await held).continue(),
  };
}

/** A fresh organization's admin, signed in to the console and on the org's `path` page. */
async function signedInOn(path: string) {
  const { org, admin } = await createTenant(app);
  const operator = await openConsole(browser);
  await signInToConsole(operator.page, app.baseUrl, admin.email);
  await operator.page.waitForURL('**/ledger');
  await operator.page.goto(`${app.baseUrl}/o/${org.slug}/${path}`);
  return { org, operator, page: operator.page };
}

describe('the console: a dialog closed while it saves', () => {
  it('an agent saved after its dialog was closed is still saved and told, and closes no dialog opened since', async () => {
    const { org, operator, page } = await signedInOn('agents');
    const dialog = page.getByRole('dialog');

    const save = await holdNextPost(page, `/orgs/${org.slug}/agents`);
    await step(page, 'the agent is saved, then its dialog closed before the save ends', async () => {
      await page.getByRole('button', { name: 'New agent' }).click();
      await dialog.getByLabel('Name').fill('Slow saver');
      await dialog.getByLabel('Instructions').fill('Answer.');
      await dialog.getByRole('button', { name: 'Save agent' }).click();
      await save.closeWhileHeld(dialog);
    });

    await step(page, 'a rule dialog opened meanwhile stays open, with what was typed, when the save ends', async () => {
      await page.getByRole('button', { name: 'New rule' }).click();
      await page.getByRole('dialog', { name: 'New action rule' }).getByLabel('Name').fill('Half typed');
      await save.release();
      await page.getByRole('table', { name: 'Agents' }).getByText('Slow saver').waitFor();
      await page.getByRole('alert').filter({ hasText: 'Agent saved' }).waitFor();
      const ruleDialog = page.getByRole('dialog', { name: 'New action rule' });
      expect(await ruleDialog.isVisible()).toBe(true);
      expect(await ruleDialog.getByLabel('Name').inputValue()).toBe('Half typed');
    });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);

  it('a webhook created after its dialog was closed still shows its secret, the only time it is shown', async () => {
    const { org, operator, page } = await signedInOn('webhooks');

    const create = await holdNextPost(page, `/orgs/${org.slug}/webhooks`);
    await step(page, 'the webhook is created, then its dialog closed before the answer comes', async () => {
      await page.getByRole('button', { name: 'New webhook' }).click();
      const dialog = page.getByRole('dialog', { name: 'New webhook' });
      await dialog.getByLabel('Name').fill('Closed early');
      await dialog.getByRole('button', { name: 'Create webhook' }).click();
      await create.closeWhileHeld(dialog);
    });

    await step(page, 'the answer comes: the secret is shown, and the webhook listed', async () => {
      await create.release();
      const reveal = page.getByRole('dialog', { name: 'Webhook created' });
      await reveal.getByText('Shown only this once').waitFor();
      expect(await reveal.locator('[data-revealed="Secret"]').textContent()).toMatch(/^whsec_/);
      await reveal.getByRole('button', { name: 'I have copied it' }).click();
      await page.waitForURL(`**/o/${org.slug}/webhooks/**`);
      await page.getByText('Closed early').first().waitFor();
    });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});
