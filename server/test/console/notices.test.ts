import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Box, capture, launchBrowser, openConsole, shownBox, signInToConsole, step } from '../helpers/browser.ts';
import { setupWebhook } from '../helpers/webhooks.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';

// Callbacks go only to public addresses here (private networks are not allowed), so a refusal is real.
const PUBLIC_URL = 'https://93.184.215.14/hooks/agent';

const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

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

describe('the console: refusals', () => {
  it('a refused callback endpoint stays said until the operator closes it, the next attempt succeeds, or another tab or page is opened', async () => {
    const setup = await setupWebhook(app);
    const { org, admin } = setup.tenant;
    const operator = await openConsole(browser);
    const { page } = operator;
    // The page's timers run on a clock the test can move: a notification that closes itself after some
    // seconds is gone once the clock is moved past them, without the test waiting for them.
    await page.clock.install();
    await signInToConsole(page, app.baseUrl, admin.email);
    await page.waitForURL('**/ledger');
    await page.goto(`${app.baseUrl}/o/${org.slug}/webhooks/${setup.webhook.id}`);
    await page.getByRole('tab', { name: 'Callbacks' }).click();

    const refused = page.getByRole('alert').filter({ hasText: 'Not added' });
    await step(page, 'an endpoint on a private address is refused, and the refusal outlasts any timer', async () => {
      await page.getByRole('button', { name: 'Add endpoint' }).first().click();
      await page.getByLabel('Endpoint URL').fill('http://10.0.0.1/hooks/agent');
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      await refused.getByText(/public address/).waitFor();
      await page.mouse.move(10, 790); // not resting on it, which would hold any notification open
      // A minute on, and the timers that a closing notification would set run out too.
      await page.clock.fastForward(60_000);
      await page.clock.runFor(5_000);
      expect(await refused.isVisible()).toBe(true);
      // Standing until closed, it covers none of the controls the operator may need meanwhile.
      const controls = [
        page.getByRole('banner').getByRole('button', { name: admin.email }),
        page.getByRole('banner').getByLabel('Organization'),
        page.getByRole('button', { name: 'Rotate secret' }),
        page.getByRole('button', { name: 'Delete' }),
      ];
      const refusal = await shownBox(refused);
      for (const control of controls) expect(overlap(refusal, await shownBox(control)), `covers ${control}`).toBe(false);
      await capture(page, 'callback-endpoint-refused');
      // Closed by hand, it goes.
      await refused.getByRole('button').click();
      await refused.waitFor({ state: 'detached' });
    });

    await step(page, 'refused again, then mended: the endpoint added takes the refusal away', async () => {
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      await refused.waitFor();
      expect(await refused.count()).toBe(1);
      await page.getByLabel('Endpoint URL').fill(PUBLIC_URL);
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      await page
        .getByRole('dialog', { name: 'Callback signing secret' })
        .getByRole('button', { name: 'I have copied it' })
        .click();
      await page.locator(`[data-endpoint-url="${PUBLIC_URL}"]`).waitFor();
      await refused.waitFor({ state: 'detached' });
    });

    await step(page, "refused once more, then another tab: the webhook's settings do not carry it", async () => {
      await page.getByRole('button', { name: 'Add endpoint' }).first().click();
      await page.getByLabel('Endpoint URL').fill('http://10.0.0.3/hooks/agent');
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      await refused.waitFor();
      await page.getByRole('tab', { name: 'Settings' }).click();
      await refused.waitFor({ state: 'detached' });
      await page.getByRole('tab', { name: 'Callbacks' }).click();
    });

    await step(page, 'refused once more, then left: another page does not carry it', async () => {
      await page.getByRole('button', { name: 'Add endpoint' }).first().click();
      await page.getByLabel('Endpoint URL').fill('http://10.0.0.2/hooks/agent');
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      await refused.waitFor();
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Ledger' }).click();
      await page.waitForURL('**/ledger');
      await refused.waitFor({ state: 'detached' });
    });
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});
