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
    /** Resolves once the request is held. */
    held: held.then(() => undefined),
    /** Once the request is held, the operator closes `dialog` (Escape) while it waits. */
    closeWhileHeld: async (dialog: Locator) => {
      await held;
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
    },
    release: async () => (await held).continue(),
  };
}

/**
 * A fresh organization's admin, signed in to the console and on the org's `path` page; with
 * `heldClock`, the page's timers are the test's (Playwright's clock) from the first page on.
 */
async function signedInOn(path: string, { heldClock = false } = {}) {
  const { org, admin } = await createTenant(app);
  const operator = await openConsole(browser);
  if (heldClock) await operator.page.clock.install();
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

/** What the page showed of its dialog at one change of the page: none, or its title, its fields' values and its opacity. */
type DialogSeen = { title: string; values: string[]; opacity: string } | null;

/** Records what the page shows of its dialog at every change of the page, until `seen` is read. */
async function watchDialog(page: Page) {
  await page.evaluate(() => {
    const seen: unknown[] = [];
    const record = () => {
      const dialog = document.querySelector<HTMLElement>('[role="dialog"]');
      seen.push(
        dialog && {
          title: dialog.querySelector('[id$="-title"]')?.textContent ?? '',
          values: [...dialog.querySelectorAll('input')].map((input) => input.value),
          opacity: dialog.style.opacity,
        },
      );
    };
    new MutationObserver(record).observe(document.body, {
      subtree: true,
      childList: true,
      attributes: true,
      characterData: true,
    });
    (window as unknown as { dialogSeen: unknown[] }).dialogSeen = seen;
  });
  return {
    seen: () => page.evaluate(() => (window as unknown as { dialogSeen: DialogSeen[] }).dialogSeen.splice(0)),
  };
}

describe('the console: a dialog opens and closes as it fades', () => {
  it('fades in, fades out still showing what it held, and opens again afresh', async () => {
    const { operator, page } = await signedInOn('agents');
    // Motion as most operators have it: the other tests run with reduced motion, where dialogs show and go at once.
    await page.emulateMedia({ reducedMotion: 'no-preference' });
    const dialog = page.getByRole('dialog', { name: 'New agent' });
    const watch = await watchDialog(page);

    await step(page, 'the dialog fades in', async () => {
      await page.getByRole('button', { name: 'New agent' }).click();
      await dialog.getByLabel('Name').fill('Typed once');
      const seen = await watch.seen();
      expect(seen.some((shown) => shown?.title === 'New agent' && shown.opacity === '0')).toBe(true);
    });

    await step(page, 'closed, it fades out with its title and what was typed, then is gone', async () => {
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
      const seen = await watch.seen();
      const fading = seen.filter((shown) => shown !== null && shown.opacity === '0');
      expect(fading.length).toBeGreaterThan(0);
      for (const shown of fading) {
        expect(shown!.title).toBe('New agent');
        expect(shown!.values).toContain('Typed once');
      }
      expect(seen.at(-1)).toBeNull();
    });

    await step(page, 'opened again, its form starts empty', async () => {
      await page.getByRole('button', { name: 'New agent' }).click();
      expect(await dialog.getByLabel('Name').inputValue()).toBe('');
    });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});

describe('the console: a save that ends while its dialog fades out', () => {
  it('closes nothing the page opened meanwhile', async () => {
    // The test holds the fade-out still with the page's clock.
    const { org, operator, page } = await signedInOn('agents', { heldClock: true });
    await page.emulateMedia({ reducedMotion: 'no-preference' });
    const agentDialog = page.getByRole('dialog', { name: 'New agent' });
    const ruleDialog = page.getByRole('dialog', { name: 'New action rule' });

    const save = await holdNextPost(page, `/orgs/${org.slug}/agents`);
    await step(page, 'the agent is saved; its dialog is closed, and a rule dialog opened, while it fades out', async () => {
      await page.getByRole('button', { name: 'New agent' }).click();
      await agentDialog.getByLabel('Name').fill('Faded saver');
      await agentDialog.getByLabel('Instructions').fill('Answer.');
      await agentDialog.getByRole('button', { name: 'Save agent' }).click();
      await save.held;
      // From here the page's time stands still: the fade-out cannot end before the test lets it.
      await page.clock.pauseAt((await page.evaluate(() => Date.now())) + 1000);
      // A dialog's transition starts two animation frames after it is asked for, then takes 200 ms.
      await page.keyboard.press('Escape');
      await page.clock.runFor(50);
      // The fading dialog's overlay still covers the page: the button gets its click directly.
      await page.getByRole('button', { name: 'New rule' }).dispatchEvent('click');
      await page.clock.runFor(50);
      await ruleDialog.waitFor();
      expect(await agentDialog.count()).toBe(1);
    });

    await step(page, 'the save ends, and is shown, while the agent dialog still fades', async () => {
      const answered = page.waitForResponse(
        (response) => response.url().endsWith(`/orgs/${org.slug}/agents`) && response.request().method() === 'POST',
      );
      await save.release();
      expect((await answered).status()).toBe(201);
      // The page's own timers (the query client's callbacks, the list's refetch) run in steps of 10 ms,
      // at most 100 ms of the fade's 200 ms in all: the dialog is still fading as the save ends.
      const listed = page.getByRole('table', { name: 'Agents' }).getByText('Faded saver');
      for (let ran = 0; ran < 100 && !(await listed.isVisible()); ran += 10) await page.clock.runFor(10);
      expect(await listed.isVisible()).toBe(true);
      expect(await agentDialog.count()).toBe(1);
    });

    await step(page, 'the fades end: the agent dialog is gone, the rule dialog opened meanwhile is still open', async () => {
      await page.clock.runFor(1000);
      await page.clock.resume();
      await agentDialog.waitFor({ state: 'detached' });
      expect(await ruleDialog.isVisible()).toBe(true);
    });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});
