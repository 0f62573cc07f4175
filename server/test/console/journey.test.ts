import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, launchBrowser, openConsole, SCREENSHOT_DIR } from '../helpers/browser.ts';
import { startCallbackReceiver } from '../helpers/callback-receiver.ts';
import { addCallback } from '../helpers/callbacks.ts';
import { createTenant, createUser, DEFAULT_PASSWORD } from '../helpers/factories.ts';
import { calledTools, startFakeModel } from '../helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { postEvent, setupWebhook, type WebhookSetup } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let model: Awaited<ReturnType<typeof startFakeModel>>;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

beforeAll(async () => {
  model = await startFakeModel();
  receiver = await startCallbackReceiver();
  app = await startTestApp({ ...model.env, CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }, { serveConsole: true });
  browser = await launchBrowser();
  // The agent writes a document (a tool the rule asks a human about), then says it is done.
  model.script((request) =>
    calledTools(request)
      ? { text: 'Done.' }
      : { toolCalls: [{ name: 'generateDocument', arguments: { title: 'Invoice', content: '# Invoice' } }] },
  );
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await receiver?.close();
  await model?.close();
});

async function signInAs(page: Page, email: string, password = DEFAULT_PASSWORD) {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Where a journey is: on failure, the step and a screenshot of the page say what it waited for. */
async function step<T>(page: Page, name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    await page.screenshot({ path: `${SCREENSHOT_DIR}/failed-${name.replaceAll(/\W+/g, '-')}.png` }).catch(() => {});
    throw new Error(`Step "${name}" failed: ${(error as Error).message}`, { cause: error });
  }
}

const ledgerRow = (page: Page, text: string) => page.getByRole('row').filter({ hasText: text });

describe('the console: an operator at work', () => {
  let setup: WebhookSetup;

  it('signs in, sees events arrive live, decides approvals, watches callbacks, replays a buffered delivery', async () => {
    setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    await addCallback(app, setup, { url: receiver.url('/console') });
    const { org, admin } = setup.tenant;
    const operator = await openConsole(browser);
    const { page } = operator;

    await step(page, 'sign in from a deep link', async () => {
      // A deep link while signed out leads to sign-in, then back to it.
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger`);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await capture(page, 'sign-in');
      await signInAs(page, admin.email);
      await page.waitForURL(`**/o/${org.slug}/ledger`);
      await page.locator('[data-live-state="live"]').waitFor();
    });

    const first = await postEvent(app, setup, { eventType: 'invoice.requested', externalId: 'inv-1', data: { amount: 10 } });
    expect(first.status).toBe(200);
    const { actionId } = await first.json();
    await step(page, 'the event appears live', async () => {
      await ledgerRow(page, 'inv-1').getByText('pending approval').first().waitFor();
      await capture(page, 'ledger');
    });

    await step(page, 'approve in the inbox', async () => {
      await page.getByRole('link', { name: /Approvals/ }).click();
      const pending = page.getByRole('row').filter({ hasText: 'generateDocument' });
      await pending.waitFor();
      await capture(page, 'approvals');
      await pending.getByRole('button', { name: 'Approve generateDocument' }).click();
      await page.getByText('Nothing waits for a decision.').waitFor();
    });

    await step(page, 'the action completes, with its callback attempts', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${actionId}`);
      await page.getByRole('heading', { level: 1 }).filter({ hasText: 'inv-1' }).waitFor();
      await page.locator('h1 + .mantine-Badge-root, h1 ~ *').getByText('completed').first().waitFor();
      const completedCallback = page.locator('[data-callback-id]').filter({ hasText: 'action.completed' });
      await completedCallback.getByRole('cell', { name: '200', exact: true }).waitFor();
      await capture(page, 'ledger-detail');
    });

    const second = await postEvent(app, setup, { eventType: 'invoice.requested', externalId: 'inv-2', data: { amount: 99999 } });
    const secondId = (await second.json()).actionId as string;
    await step(page, 'reject with a reason', async () => {
      await page.getByRole('link', { name: /Approvals/ }).click();
      await page.getByRole('row').filter({ hasText: 'generateDocument' }).getByRole('button', { name: 'Reject generateDocument' }).click();
      await page.getByLabel('Reason').fill('Amount too large');
      await page.getByRole('dialog').getByRole('button', { name: 'Reject' }).click();
      await page.getByText('Nothing waits for a decision.').waitFor();
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${secondId}`);
      await page.getByText('Amount too large').first().waitFor();
    });

    // A delivery buffered while the rule was off is replayed once it is back on.
    await app.request('PATCH', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, { token: setup.tenant.token, body: { enabled: false } });
    const buffered = await postEvent(app, setup, { eventType: 'invoice.requested', externalId: 'inv-3', data: {} });
    expect(buffered.status).toBe(202);
    const { eventId } = await buffered.json();
    await step(page, 'replay a buffered delivery', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger?kind=delivery`);
      await ledgerRow(page, 'inv-3').waitFor();
      await app.request('PATCH', `/orgs/${org.slug}/action-rules/${setup.ruleId}`, { token: setup.tenant.token, body: { enabled: true } });
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${eventId}`);
      await page.getByRole('button', { name: 'Replay' }).click();
      await page.getByText(/Replayed: /).waitFor();
    });

    operator.expectNoProblems();
    await operator.close();
  }, 120_000);

  it("shows another org's ledger row as not found, and keeps a Guest out of admin pages (the API refuses too)", async () => {
    const other = await createTenant(app);
    const otherSetup = await setupWebhook(app);
    const foreign = await postEvent(app, otherSetup, { eventType: 'x', externalId: 'foreign', data: {} });
    const foreignId = (await foreign.json()).actionId as string;

    const operator = await openConsole(browser);
    await operator.page.goto(`${app.baseUrl}/sign-in`);
    await signInAs(operator.page, other.admin.email);
    await operator.page.waitForURL('**/ledger');
    await operator.page.goto(`${app.baseUrl}/o/${other.org.slug}/ledger/${foreignId}`);
    await operator.page.getByRole('heading', { name: 'Not found' }).waitFor();
    await operator.page.goto(`${app.baseUrl}/o/${otherSetup.tenant.org.slug}/ledger`);
    await operator.page.getByRole('heading', { name: 'Not found' }).waitFor();
    await capture(operator.page, 'not-found');
    operator.expectNoProblems();
    await operator.close();

    const guest = await createUser(app, { role: 'Guest', org: other.org.slug });
    const visitor = await openConsole(browser);
    const { page } = visitor;
    await page.goto(`${app.baseUrl}/sign-in`);
    await signInAs(page, guest.email);
    await page.waitForURL(`**/o/${other.org.slug}/documents`);
    const navigation = page.getByRole('navigation', { name: 'Pages' });
    await navigation.getByText('Documents').waitFor();
    expect(await navigation.getByText('Ledger').count()).toBe(0);
    expect(await navigation.getByText('Approvals').count()).toBe(0);
    await capture(page, 'guest-documents');
    await page.goto(`${app.baseUrl}/o/${other.org.slug}/approvals`);
    await page.getByText('Administrators only').waitFor();
    const refused = await page.evaluate(async (slug) => (await fetch(`/orgs/${slug}/approvals`)).status, other.org.slug);
    expect(refused).toBe(403);
    visitor.expectNoProblems();
    await visitor.close();
  });

  it('shows the first page of a ledger of 10,000 rows (time reported, not asserted)', async () => {
    const { org, admin } = await createTenant(app);
    await sql`
      insert into webhook_deliveries (id, org_id, status, reason, event_type, external_id, payload, verification_scheme, created_at)
      select gen_random_uuid(), ${org.id}::uuid, 'skipped', 'event_type_filtered', 'load.test', 'row-' || g, '{}'::jsonb, 'wh',
             now() - g * interval '1 second'
      from generate_series(1, 10000) g`.execute(app.container.db);
    const operator = await openConsole(browser);
    const { page } = operator;
    await page.goto(`${app.baseUrl}/sign-in`);
    await signInAs(page, admin.email);
    await page.waitForURL(`**/o/${org.slug}/ledger`);
    // A fresh load of the page, as an operator opening a link: navigation to the first row shown.
    const started = performance.now();
    await page.goto(`${app.baseUrl}/o/${org.slug}/ledger`);
    await ledgerRow(page, 'row-1)').waitFor();
    const elapsedMs = Math.round(performance.now() - started);
    expect(await page.locator('tbody tr').count()).toBe(50);
    process.stdout.write(`console budget: ledger of 10,000 rows, first page shown in ${elapsedMs} ms (budget 1000 ms)\n`);
    operator.expectNoProblems();
    await operator.close();
  });
});
