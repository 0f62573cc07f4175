import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { DEFAULT_PASSWORD } from './factories.ts';

/** Debian's Chromium (.ci/run installs it); Playwright's own browser download cannot work here. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** No sandbox as root; nothing that would reach hosts outside the test (updates, sync, safe browsing). */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];
/** Screenshots of every page, written by the run for people to look at (not committed). */
export const SCREENSHOT_DIR = join(import.meta.dirname, '../../test-results/console');

const consoleDir = join(import.meta.dirname, '../../../console');
/** The console as `npm start` serves it: built from its sources unless dist/ is current (global setup). */
export async function buildConsole(): Promise<void> {
  await promisify(execFile)(process.execPath, [join(consoleDir, 'scripts/build.ts'), '--if-stale']);
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(join(consoleDir, 'dist/index.html'))) throw new Error('The console is not built (the global setup builds it)');
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium)`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/**
 * A browser context at 1280x800 that records what would show a broken page: uncaught errors,
 * console errors, and server errors. The API's 4xx answers are the console working (a signed-out
 * check, a refused Guest): the browser logs those as "Failed to load resource", and they are not counted.
 */
export async function openConsole(browser: Browser) {
  // Reduced motion: modals and notifications appear at once, so screenshots and axe see them settled.
  const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 800 }, reducedMotion: 'reduce' });
  // Well inside the test's own timeout, so that a failed wait names what it waited for.
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const problems: string[] = [];
  const watch = (watched: Page) => {
    watched.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
    watched.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text())) return;
      problems.push(`console: ${message.text()}`);
    });
    watched.on('response', (response) => {
      if (response.status() >= 500) problems.push(`server error: ${response.status()} ${response.url()}`);
    });
  };
  watch(page);
  context.on('page', watch);
  return {
    context,
    page,
    problems,
    expectNoProblems: () => expect(problems).toEqual([]),
    close: () => context.close(),
  };
}

/** axe-core on the page as it is: no serious or critical violation. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  // Frames are left out: the console's only ones show senders' email in a sandbox where no script
  // (axe's included) may run, and their markup is the sender's, not ours.
  const results = await new AxeBuilder({ page }).exclude('iframe').options({ iframes: false }).analyze();
  const severe = results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${name}: ${violation.id} (${violation.impact}) ${violation.help}: ${violation.nodes.map((node) => `${node.target.join(' ')} [${node.any[0]?.message ?? ''}]`).join(', ')}`,
    );
  expect(severe).toEqual([]);
}

/** A 1280x800 screenshot into SCREENSHOT_DIR, and the accessibility check of the page shown. */
export async function capture(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // The page at rest: not the hover state of whatever was clicked last.
  await page.mouse.move(1279, 799);
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`) });
  await expectAccessible(page, name);
}

export type Box = NonNullable<Awaited<ReturnType<Locator['boundingBox']>>>;
/** Where an element is on the page; it fails when the element is not shown. */
export async function shownBox(locator: Locator): Promise<Box> {
  const found = await locator.boundingBox();
  if (!found) throw new Error(`${locator} is not shown`);
  return found;
}

/** Where a journey is: on failure, the step and a screenshot of the page say what it waited for. */
export async function step<T>(page: Page, name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    await page.screenshot({ path: `${SCREENSHOT_DIR}/failed-${name.replaceAll(/\W+/g, '-')}.png` }).catch(() => {});
    throw new Error(`Step "${name}" failed: ${(error as Error).message}`, { cause: error });
  }
}

/** Signs in on the console's sign-in page as a person would (the password is the factories' default unless given). */
export async function signInToConsole(page: Page, baseUrl: string, email: string, password = DEFAULT_PASSWORD): Promise<void> {
  await page.goto(`${baseUrl}/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
