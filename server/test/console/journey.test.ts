import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, launchBrowser, openConsole, step } from '../helpers/browser.ts';
import { startCallbackReceiver } from '../helpers/callback-receiver.ts';
import { eventually } from '../helpers/eventually.ts';
import { createTenant, createUser, DEFAULT_PASSWORD } from '../helpers/factories.ts';
import { calledTools, startFakeModel } from '../helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { postEvent, setupWebhook } from '../helpers/webhooks.ts';

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

const ledgerRow = (page: Page, text: string) => page.getByRole('row').filter({ hasText: text });

describe('the console: an operator at work', () => {
  it('sets up an agent, a rule and a webhook, sees events arrive live, decides approvals, watches callbacks, replays a buffered delivery', async () => {
    const { org, admin } = await createTenant(app);
    const operator = await openConsole(browser);
    const { page } = operator;
    await operator.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.baseUrl });

    await step(page, 'sign in from a deep link', async () => {
      // A deep link while signed out leads to sign-in, then back to it.
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger`);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await capture(page, 'sign-in');
      await signInAs(page, admin.email);
      await page.waitForURL(`**/o/${org.slug}/ledger`);
      await page.locator('[data-live-state="live"]').waitFor();
    });

    await step(page, 'create an agent and a rule that asks before generateDocument', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('button', { name: 'New agent' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Name').fill('Invoicer');
      await dialog.getByLabel('Instructions').fill('Write the invoice the event asks for.');
      await dialog.getByRole('checkbox', { name: 'generateDocument' }).check();
      await dialog.getByRole('button', { name: 'Save agent' }).click();
      await page.getByRole('table', { name: 'Agents' }).getByText('Invoicer').waitFor();
      await page.getByRole('button', { name: 'New rule' }).click();
      await dialog.getByLabel('Name').fill('Invoices');
      await dialog.getByLabel('Agent', { exact: true }).click();
      await page.getByRole('option', { name: 'Invoicer' }).click();
      const mode = dialog.getByRole('radiogroup', { name: 'Approval mode of generateDocument' });
      await mode.getByText('allow', { exact: true }).click();
      await mode.getByText('ask', { exact: true }).click();
      // Every admin decides (the default), and each is told by email.
      expect(await dialog.getByRole('checkbox', { name: 'Every admin of the organization' }).isChecked()).toBe(true);
      await dialog.getByRole('switch', { name: 'Email the approvers when a call waits' }).check({ force: true });
      await capture(page, 'rule-form');
      await dialog.getByRole('button', { name: 'Save rule' }).click();
      await page.getByRole('table', { name: 'Action rules' }).getByText('generateDocument: ask').waitFor();
      await capture(page, 'agents');
    });

    const webhook = await step(page, 'create a webhook and copy its secret', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('button', { name: 'New webhook' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Name').fill('Invoices');
      await dialog.getByLabel('Action rule', { exact: true }).click();
      await page.getByRole('option', { name: 'Invoices' }).click();
      await dialog.getByLabel('Run as (default user)', { exact: true }).click();
      await page.getByRole('option', { name: admin.email }).click();
      await dialog.getByRole('button', { name: 'Create webhook' }).click();
      const reveal = page.getByRole('dialog', { name: 'Webhook created' });
      await reveal.getByText('Shown only this once').waitFor();
      await capture(page, 'webhook-secret');
      await reveal.getByRole('button', { name: 'Copy secret' }).click();
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      const secret = (await reveal.locator('[data-revealed="Secret"]').textContent()) ?? '';
      const url = (await reveal.locator('[data-revealed="URL"]').textContent()) ?? '';
      expect(copied).toBe(secret);
      expect(secret).toMatch(/^whsec_/);
      await reveal.getByRole('button', { name: 'I have copied it' }).click();
      await page.getByRole('tab', { name: 'Callbacks' }).click();
      await page.getByRole('button', { name: 'Add endpoint' }).first().click();
      await page.getByLabel('Endpoint URL').fill(receiver.url('/console'));
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      await page
        .getByRole('dialog', { name: 'Callback signing secret' })
        .getByRole('button', { name: 'I have copied it' })
        .click();
      await page.locator(`[data-endpoint-url="${receiver.url('/console')}"]`).waitFor();
      await capture(page, 'webhook-callbacks');
      return { secret, path: new URL(url).pathname, webhook: { verificationScheme: 'wh' as const } };
    });

    const first = await postEvent(app, webhook, { eventType: 'invoice.requested', externalId: 'inv-1', data: { amount: 10 } });
    expect(first.status).toBe(200);
    const { actionId } = await first.json();
    await step(page, 'the event appears live', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Ledger' }).click();
      await ledgerRow(page, 'inv-1').getByText('pending approval').first().waitFor();
      await capture(page, 'ledger');
    });

    // A second operator of the org watches the same inbox.
    const colleague = await openConsole(browser);
    const colleagueUser = await createUser(app, { role: 'Admin', org: org.slug });
    await step(colleague.page, 'a colleague opens the inbox', async () => {
      await colleague.page.goto(`${app.baseUrl}/o/${org.slug}/approvals`);
      await signInAs(colleague.page, colleagueUser.email);
      await colleague.page.getByRole('row').filter({ hasText: 'generateDocument' }).waitFor();
    });
    // The rule's approvers are told by a job once the call is staged. A call decided before that job ran
    // needs no telling, and the record would rightly say nothing: under load, the test waits for it.
    await eventually("the approvers' notification recorded", async () => {
      const told = await app.container.db
        .selectFrom('approvalNotifications')
        .select('status')
        .where('actionId', '=', actionId)
        .executeTakeFirst();
      return told?.status === 'not_sent' ? true : undefined;
    });
    await step(page, 'approve in the inbox', async () => {
      await page.getByRole('link', { name: /Approvals/ }).click();
      const pending = page.getByRole('row').filter({ hasText: 'generateDocument' });
      await pending.waitFor();
      // Which action it is, as the approval emails and Slack messages name it.
      await pending.getByRole('link', { name: 'invoice.requested (inv-1)' }).waitFor();
      await capture(page, 'approvals');
      await pending.getByRole('button', { name: 'Approve generateDocument' }).click();
      await page.getByText('Nothing waits for a decision.').waitFor();
    });
    // The decided call leaves the colleague's list too, without a reload.
    await step(colleague.page, "the call leaves the colleague's inbox", () =>
      colleague.page.getByText('Nothing waits for a decision.').waitFor(),
    );
    colleague.expectNoProblems();
    await colleague.close();

    await step(page, 'the action completes, with its callback attempts', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${actionId}`);
      await page.getByRole('heading', { level: 1 }).filter({ hasText: 'inv-1' }).waitFor();
      await page.getByRole('heading', { level: 1 }).filter({ hasText: 'completed' }).waitFor();
      const completedCallback = page.locator('[data-callback-id]').filter({ hasText: 'action.completed' });
      await completedCallback.getByRole('cell', { name: '200', exact: true }).waitFor();
      // The conversation of the run: the agent's call and the tool's answer.
      await page.getByText('calls generateDocument').waitFor();
      await page.getByText('generateDocument answered').waitFor();
      // Decided in the console: the record says so.
      const calls = page.getByRole('table', { name: 'Tool calls' });
      await calls.getByText(`by ${admin.email} via the console`).waitFor();
      // The rule emails its approvers, but this org has no email integration: the record says so.
      await calls.getByText(`not emailed ${admin.email} (not_sent): the organization has no email integration`).waitFor();
      await capture(page, 'ledger-detail');
    });

    const second = await postEvent(app, webhook, {
      eventType: 'invoice.requested',
      externalId: 'inv-2',
      data: { amount: 99999 },
    });
    const secondId = (await second.json()).actionId as string;
    await step(page, 'reject with a reason', async () => {
      await page.getByRole('link', { name: /Approvals/ }).click();
      await page
        .getByRole('row')
        .filter({ hasText: 'generateDocument' })
        .getByRole('button', { name: 'Reject generateDocument' })
        .click();
      await page.getByLabel('Reason').fill('Amount too large');
      await page.getByRole('dialog').getByRole('button', { name: 'Reject' }).click();
      await page.getByText('Nothing waits for a decision.').waitFor();
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${secondId}`);
      await page.getByText('Amount too large').first().waitFor();
    });

    const setRuleEnabled = async (enabled: boolean) => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/agents`);
      await page
        .getByRole('table', { name: 'Action rules' })
        .getByRole('row')
        .filter({ hasText: 'Invoices' })
        .getByRole('button', { name: 'Edit' })
        .click();
      const toggle = page.getByRole('dialog').getByRole('switch', { name: 'Enabled' });
      if (enabled) await toggle.check();
      else await toggle.uncheck();
      await page.getByRole('dialog').getByRole('button', { name: 'Save rule' }).click();
      await page
        .getByRole('table', { name: 'Action rules' })
        .getByText(enabled ? 'enabled' : 'disabled', { exact: true })
        .waitFor();
    };
    await step(page, 'disable the rule', () => setRuleEnabled(false));
    const buffered = await postEvent(app, webhook, { eventType: 'invoice.requested', externalId: 'inv-3', data: {} });
    expect(buffered.status).toBe(202);
    const { eventId } = await buffered.json();
    await step(page, 'replay the buffered delivery once the rule is fixed', async () => {
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger?kind=delivery`);
      await ledgerRow(page, 'inv-3').waitFor();
      await setRuleEnabled(true);
      await page.goto(`${app.baseUrl}/o/${org.slug}/ledger/${eventId}`);
      await page.getByRole('button', { name: 'Replay' }).click();
      await page.getByText(/Replayed: /).waitFor();
    });

    await step(page, 'send a test event from the console', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Webhooks' }).click();
      await capture(page, 'webhooks');
      await page.getByRole('link', { name: 'Invoices' }).click();
      await page.getByRole('button', { name: 'Rotate secret' }).waitFor();
      await capture(page, 'webhook-settings');
      await page.getByRole('tab', { name: 'Send test' }).click();
      await page.getByLabel('External id').fill('from-the-console');
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByText('posted to the public URL').waitFor();
      await page.getByText('HTTP 200').waitFor();
      await capture(page, 'webhook-send-test');
    });

    await step(page, 'tool preferences', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Me', exact: true }).click();
      const deny = page.getByRole('switch', { name: 'Always deny sendEmail' });
      await deny.check();
      await page.reload();
      await page.getByRole('switch', { name: 'Always deny sendEmail' }).waitFor();
      expect(await page.getByRole('switch', { name: 'Always deny sendEmail' }).isChecked()).toBe(true);
      // Approval emails are the operator's own choice.
      const emails = page.getByRole('switch', { name: 'Approval emails' });
      expect(await emails.isChecked()).toBe(true);
      const [saved] = await Promise.all([
        page.waitForResponse((response) => response.url().endsWith('/auth/me/preferences')),
        emails.uncheck({ force: true }),
      ]);
      expect(saved.status()).toBe(200);
      await page.reload();
      await page.getByRole('switch', { name: 'Approval emails' }).waitFor();
      expect(await page.getByRole('switch', { name: 'Approval emails' }).isChecked()).toBe(false);
      await capture(page, 'me');
    });

    operator.expectNoProblems();
    await operator.close();
  }, 180_000);

  it("shows another org's ledger row as not found, and keeps a Guest out of admin pages (the API refuses too), but not out of the approvals inbox", async () => {
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
    await capture(page, 'guest-documents');
    await page.goto(`${app.baseUrl}/o/${other.org.slug}/ledger`);
    await page.getByText('Administrators only').waitFor();
    const refused = await page.evaluate(async (slug) => (await fetch(`/orgs/${slug}/ledger`)).status, other.org.slug);
    expect(refused).toBe(403);
    // The approvals inbox is every member's: a Guest no rule names has nothing in it.
    await navigation.getByText('Approvals').click();
    await page.getByText('Nothing waits for a decision.').waitFor();
    visitor.expectNoProblems();
    await visitor.close();
  }, 90_000);

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
