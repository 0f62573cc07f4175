import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, launchBrowser, openConsole, signInToConsole, step } from '../helpers/browser.ts';
import { eventually } from '../helpers/eventually.ts';
import { createTenant, uniqueEmail } from '../helpers/factories.ts';
import { startFakeCodehost } from '../helpers/fake-codehost.ts';
import { startFakeMailProvider } from '../helpers/fake-mail-provider.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';

let app: TestApp;
let browser: Browser;
let mail: Awaited<ReturnType<typeof startFakeMailProvider>>;
let codehost: Awaited<ReturnType<typeof startFakeCodehost>>;

beforeAll(async () => {
  mail = await startFakeMailProvider();
  codehost = await startFakeCodehost({ clientId: 'console-client', clientSecret: 'console-secret' });
  app = await startTestApp({ MAIL_API_KEY: mail.apiKey, MAIL_API_URL: mail.url, ...codehost.env }, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await mail?.close();
  await codehost?.close();
});

describe('the console: accounts', () => {
  it('resets a forgotten password through the link the mail brings, then signs in with the new one', async () => {
    const { admin, org } = await createTenant(app);
    const visitor = await openConsole(browser);
    const { page } = visitor;
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await step(page, 'ask for a reset link', async () => {
      // The page is loaded on first visit: fill its form, not the sign-in form it replaces.
      await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
      await page.getByLabel('Email').fill(admin.email);
      await page.getByRole('button', { name: 'Send the reset link' }).click();
      await page.getByText('a reset link is on its way').waitFor();
      await capture(page, 'forgot-password');
    });

    const sent = await mail.waitFor(admin.email);
    const link = /(http\S+\/reset-password\?token=\S+)/.exec(sent.text ?? '')?.[1];
    expect(link?.startsWith(`${app.baseUrl}/reset-password?token=`)).toBe(true);
    await page.goto(link!);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await page.getByLabel('New password').fill('a new long password');
    await page.getByLabel('Repeat it').fill('a different one');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByText('The passwords differ').waitFor();
    await page.getByLabel('Repeat it').fill('a new long password');
    await capture(page, 'reset-password');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByText('Your password is changed').waitFor();

    // The link is spent: using it again says so.
    await page.goto(link!);
    await page.getByLabel('New password').fill('yet another password');
    await page.getByLabel('Repeat it').fill('yet another password');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('alert').waitFor();

    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByLabel('Email').fill(admin.email);
    await page.getByLabel('Password', { exact: true }).fill('a new long password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`**/o/${org.slug}/ledger`);
    visitor.expectNoProblems();
    await visitor.close();
  });

  it('refuses a wrong password with the reason, and signs out', async () => {
    const { admin } = await createTenant(app);
    const visitor = await openConsole(browser);
    const { page } = visitor;
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByLabel('Email').fill(admin.email);
    await page.getByLabel('Password', { exact: true }).fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Password', { exact: true }).fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/ledger');
    await page.getByRole('button', { name: admin.email }).click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await page.waitForURL('**/sign-in');
    // The session is gone: a page behind it leads back to sign-in.
    await page.goto(`${app.baseUrl}/me`);
    await page.waitForURL('**/sign-in?redirect=*');
    visitor.expectNoProblems();
    await visitor.close();
  });

  it('works at another address of the server than APP_HOST: signed in at localhost, its writes are not refused as cross-site', async () => {
    const { admin, token } = await createTenant(app);
    const visitor = await openConsole(browser);
    const { page } = visitor;
    const elsewhere = app.baseUrl.replace('127.0.0.1', 'localhost');
    await signInToConsole(page, elsewhere, admin.email);
    await page.waitForURL('**/ledger');
    await page.goto(`${elsewhere}/me`);
    await page.getByLabel('Approval emails').click({ force: true });
    await eventually('the preference, saved', async () => {
      const me = await (await app.request('GET', '/auth/me', { token })).json();
      return me.preferences.approvalEmails === false ? true : undefined;
    });
    visitor.expectNoProblems();
    await visitor.close();
  });

  it('signs in through the code host when it is configured, and switches organizations keeping the page', async () => {
    const email = uniqueEmail('octo');
    codehost.setAccount({
      id: Math.floor(Math.random() * 1e9),
      login: 'octo',
      name: 'Octo Cat',
      email,
      emails: [{ email, primary: true, verified: true }],
    });
    const visitor = await openConsole(browser);
    const { page } = visitor;
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByRole('link', { name: 'Sign in with code host' }).click();
    // A new account belongs to no organization yet: the console says so.
    await page.getByRole('heading', { name: 'No organization yet' }).waitFor();
    expect(await page.getByText(email).count()).toBe(1);
    visitor.expectNoProblems();
    await visitor.close();

    const { admin, org } = await createTenant(app);
    const second = await createTenant(app);
    await app.container.services.orgs.addMember(second.org.slug, admin.email);
    const operator = await openConsole(browser);
    await operator.page.goto(`${app.baseUrl}/o/${org.slug}/approvals`);
    await operator.page.getByLabel('Email').fill(admin.email);
    await operator.page.getByLabel('Password', { exact: true }).fill('correct horse battery staple');
    await operator.page.getByRole('button', { name: 'Sign in' }).click();
    await operator.page.waitForURL(`**/o/${org.slug}/approvals`);
    await operator.page.locator('input[aria-label="Organization"]').click();
    await operator.page.getByRole('option', { name: second.org.name }).click();
    await operator.page.waitForURL(`**/o/${second.org.slug}/approvals`);
    operator.expectNoProblems();
    await operator.close();
  });
});
