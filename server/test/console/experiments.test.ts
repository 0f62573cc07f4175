import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../helpers/actions.ts';
import { capture, expectAccessible, launchBrowser, openConsole, shownBox, signInToConsole, step } from '../helpers/browser.ts';
import { auth, runEvent } from '../helpers/callbacks.ts';
import { type ChatRequest, calledTools, eventData, startFakeModel, toolResults } from '../helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-server.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { setupWebhook } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let orders: TestMcpServer;
let model: Awaited<ReturnType<typeof startFakeModel>>;

/** Refunds the event's amount, capped by "Refund at most N." in the instructions; then says what the tool answered. */
function followInstructions(request: ChatRequest) {
  const { order_id: orderId, amount } = eventData(request);
  const system = request.messages.find((message) => message.role === 'system')?.content ?? '';
  const cap = Number(/Refund at most (\d+)\./.exec(system)?.[1] ?? Number.POSITIVE_INFINITY);
  if (!calledTools(request))
    return { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId, amount: Math.min(amount, cap) } }] };
  return { text: `Done: ${JSON.stringify(toolResults(request).at(-1)!.content)}` };
}

beforeAll(async () => {
  orders = await startTestMcpServer();
  model = await startFakeModel();
  model.script(followInstructions);
  app = await startTestApp({ ...model.env, MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await orders?.close();
  await model?.close();
});

describe('the console: versions and experiments', () => {
  it('saves a draft, diffs it, runs an experiment on past actions, publishes it and rolls back', async () => {
    const made = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'allow' } });
    const { org, token, admin } = made.tenant;
    await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: orders.url } });
    await app.request('PATCH', `/orgs/${org.slug}/agents/${made.agentId}`, {
      token,
      // The server's model named by the agent, on the server's provider (MODEL_PROVIDER).
      body: {
        name: 'Refunder',
        instructions: 'Refund what the customer asks.',
        tools: ['orders__refund_order'],
        model: 'scripted-model',
      },
    });
    for (const [orderId, amount] of [
      ['O-1', 40],
      ['O-2', 250],
    ] as const) {
      const id = await runEvent(app, made, { data: { order_id: orderId, amount } });
      await waitForAction(app, auth(made), id, ['completed']);
    }
    const effects = orders.sideEffects.length;

    const operator = await openConsole(browser);
    const { page } = operator;
    await signInToConsole(page, app.baseUrl, admin.email);
    await page.waitForURL('**/ledger');

    await step(page, 'the agent page: save a change as a draft, and see it beside the live version', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Agents' }).click();
      const listed = page.getByRole('table', { name: 'Agents' }).getByRole('row').filter({ hasText: 'Refunder' });
      await listed.getByText("scripted-model on the server's provider").waitFor();
      await listed.getByRole('link', { name: 'Refunder' }).click();
      await page.getByText('live: version 2').waitFor();
      await page.getByText("scripted-model on the server's provider · 1 tool").waitFor();
      const live = page.getByRole('region', { name: 'What the live version does' });
      await live.getByText('Refund what the customer asks.').waitFor();
      await live.getByText('orders__refund_order').waitFor();
      await page.getByRole('button', { name: 'Edit' }).click();
      const dialog = page.getByRole('dialog');
      // Saved unchanged, a draft would be the live version again: refused, and the dialog stays open. The
      // refusal is said in the dialog, by its buttons: a notification at the top would cover its title.
      await dialog.getByRole('button', { name: 'Save as draft' }).click();
      const refused = dialog.getByRole('alert').filter({ hasText: 'Draft not saved' });
      await refused.getByText('The draft changes nothing: version 2, the live one, has the same instructions').waitFor();
      // Shown above the buttons, below the dialog's long list of tools: brought into view with them.
      const { height } = page.viewportSize()!;
      const button = dialog.getByRole('button', { name: 'Save as draft' });
      const bottom = async () => {
        const box = await shownBox(button);
        return box.y + box.height;
      };
      await expect.poll(bottom).toBeLessThanOrEqual(height);
      expect((await shownBox(refused)).y).toBeGreaterThanOrEqual(0);
      await capture(page, 'agent-draft-refused');
      // Closed and opened again, the dialog holds no refusal of what it held before.
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      await page.getByRole('button', { name: 'Edit' }).click();
      await dialog.getByLabel('Instructions').waitFor();
      expect(await refused.count()).toBe(0);
      // Refused again, then mended: the draft saved next closes the dialog, and the refusal with it.
      await dialog.getByRole('button', { name: 'Save as draft' }).click();
      await refused.waitFor();
      await dialog.getByLabel('Instructions').fill('Refund what the customer asks.\nRefund at most 100.');
      await dialog.getByLabel('Change note').fill('cap refunds');
      await dialog.getByRole('button', { name: 'Save as draft' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await page.getByText('Saved as draft: version 3, not live').waitFor();
      await refused.waitFor({ state: 'detached' });
      const versions = page.getByRole('table', { name: 'Versions' });
      await versions.getByRole('row').filter({ hasText: 'cap refunds' }).getByText('draft').waitFor();
      await page.getByText('live: version 2').waitFor();
      const diff = page.getByRole('region', { name: 'Diff' });
      await diff.getByText('+ Refund at most 100.').waitFor();
      await expectAccessible(page, 'agent-versions');
      await capture(page, 'agent-versions');
    });

    await step(page, 'an experiment of the draft on the past actions: the capped refund changed', async () => {
      await page
        .getByRole('table', { name: 'Versions' })
        .getByRole('row')
        .filter({ hasText: 'cap refunds' })
        .getByRole('button', { name: 'Experiment' })
        .click();
      const dialog = page.getByRole('dialog', { name: 'Run an experiment' });
      await dialog.getByRole('button', { name: 'Start' }).click();
      await page.waitForURL('**/experiments/**');
      await page.getByText('2 of 2 actions').waitFor();
      await page.getByText('1 changed · 1 same · 0 failed').waitFor();
      // Counted in words: the loopback model has no price, and neither side's runs waited for an approval.
      const sides = page.getByText(/^\d+ tokens · cost unknown · 0 approvals$/);
      await sides.first().waitFor();
      expect(await sides.count()).toBe(2);
      const results = page.getByRole('table', { name: 'Results' });
      await results.getByRole('row').filter({ hasText: 'changed' }).getByRole('button').click();
      const comparison = page.getByRole('region', { name: 'Comparison' });
      // The action as its sender named it: the event type and its external id.
      await comparison.getByRole('link', { name: /^order\.created \([\w-]+\)$/ }).waitFor();
      await comparison.getByText('orders__refund_order: /amount 250 → 100').waitFor();
      await comparison.getByRole('region', { name: 'Version 3' }).getByText('not executed', { exact: true }).waitFor();
      await page.getByRole('radiogroup', { name: 'Outcome' }).getByText('same', { exact: true }).click();
      await results.getByRole('row').filter({ hasText: 'changed' }).waitFor({ state: 'detached' });
      await page.getByRole('radiogroup', { name: 'Outcome' }).getByText('all', { exact: true }).click();
      await expectAccessible(page, 'experiment');
      await capture(page, 'experiment');
      expect(orders.sideEffects.length).toBe(effects);
    });

    await step(page, 'publish the draft from the experiment, then roll back', async () => {
      await page.getByRole('button', { name: 'Publish version 3' }).click();
      await page.getByText('version 3 is live', { exact: true }).waitFor();
      // The replayed action's ledger row: the version it ran with, and the one live now.
      await page.getByRole('region', { name: 'Comparison' }).getByRole('link').first().click();
      await page.getByText('version 2 (version 3 is live now)').waitFor();
      await page.getByText(/^\d+ calls?, \d+ tokens, cost unknown$/).waitFor();
      await page.goBack();
      await page.getByRole('link', { name: 'Refunder' }).click();
      await page.getByText('live: version 3').waitFor();
      await page.getByRole('button', { name: 'Roll back to version 2' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Roll back' }).click();
      await page.getByText('live: version 2').waitFor();
      // Rolled back from, version 3 is no draft: it says when it went live, and until when.
      const rolledBack = page.getByRole('table', { name: 'Versions' }).getByRole('row').filter({ hasText: 'v3' });
      await rolledBack.getByText(/^was live from .+ to .+$/).waitFor();
      expect(await rolledBack.getByText('draft', { exact: true }).count()).toBe(0);
      // The agent's experiments say what each found without opening it.
      const experiments = page.getByRole('table', { name: 'Experiments' });
      await experiments.getByRole('row').filter({ hasText: 'v3' }).getByText('1 changed · 1 same · 0 failed').waitFor();
      await capture(page, 'agent-rolled-back');
    });
    const agent = await (await app.request('GET', `/orgs/${org.slug}/agents/${made.agentId}`, { token })).json();
    expect(agent).toMatchObject({ liveVersion: 2, instructions: 'Refund what the customer asks.' });
    const { publications } = await (
      await app.request('GET', `/orgs/${org.slug}/agents/${made.agentId}/publications`, { token })
    ).json();
    expect(publications.slice(0, 2).map((p: { version: number }) => p.version)).toEqual([2, 3]);
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});
