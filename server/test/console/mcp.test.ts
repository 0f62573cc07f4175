import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, launchBrowser, openConsole, step } from '../helpers/browser.ts';
import { createTenant, DEFAULT_PASSWORD } from '../helpers/factories.ts';
import { freePort } from '../helpers/http.ts';
import { startTestMcpServer, type TestMcpServer } from '../helpers/mcp-server.ts';
import { calledTools, startFakeModel } from '../helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { postEvent } from '../helpers/webhooks.ts';

let app: TestApp;
let browser: Browser;
let orders: TestMcpServer;
let model: Awaited<ReturnType<typeof startFakeModel>>;

beforeAll(async () => {
  orders = await startTestMcpServer({ bearerToken: 'orders-token-4242' });
  model = await startFakeModel();
  model.script((request) =>
    calledTools(request)
      ? { text: 'Done.' }
      : { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'A-7', amount: 500 } }] },
  );
  app = await startTestApp({ ...model.env, MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { serveConsole: true });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await orders?.close();
  await model?.close();
});

describe('the console: MCP servers', () => {
  it('connects a server after its connection test, offers its tools to agents and edits argument rules', async () => {
    const tenant = await createTenant(app);
    const operator = await openConsole(browser);
    const { page } = operator;
    await page.goto(`${app.baseUrl}/sign-in`);
    await page.getByLabel('Email').fill(tenant.admin.email);
    await page.getByLabel('Password', { exact: true }).fill(DEFAULT_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/ledger');

    await step(page, 'a failing connection test, then a working one, then save', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'MCP servers' }).click();
      await page.getByText('No MCP servers yet.').waitFor();
      await page.getByRole('button', { name: 'Connect a server' }).click();
      const dialog = page.getByRole('dialog', { name: 'Connect an MCP server' });
      await dialog.getByLabel('Name').fill('orders');
      await dialog.getByLabel('URL').fill(`http://127.0.0.1:${await freePort()}/mcp`);
      await dialog.getByRole('button', { name: 'Test connection' }).click();
      await dialog.getByRole('alert').filter({ hasText: 'could not be reached' }).waitFor();
      expect(await dialog.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);

      await dialog.getByLabel('URL').fill(orders.url);
      await dialog.getByRole('button', { name: 'Test connection' }).click();
      await dialog.getByRole('alert').filter({ hasText: 'refused the credentials' }).waitFor();
      await dialog.getByRole('button', { name: 'Add header' }).click();
      await dialog.getByLabel('Header 1 name').fill('Authorization');
      await dialog.getByLabel('Header 1 value').fill('Bearer orders-token-4242');
      await dialog.getByRole('button', { name: 'Test connection' }).click();
      await dialog.getByText('Connected to orders 1.2.3').waitFor();
      await dialog.getByText('orders__refund_order').waitFor();
      await capture(page, 'mcp-connection-test');
      await dialog.getByRole('button', { name: 'Save' }).click();
      await dialog.waitFor({ state: 'hidden' });
      const card = page.getByRole('region', { name: 'MCP server orders' });
      await card.getByText('Authorization: ...4242').waitFor();
      await card.getByText('destructive').first().waitFor();
      await card.getByText('read-only').first().waitFor();
      expect(await page.content()).not.toContain('orders-token-4242');
      await capture(page, 'mcp-servers');
    });

    await step(page, 'give an agent the server tool, and a rule an argument rule', async () => {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('button', { name: 'New agent' }).click();
      const agentDialog = page.getByRole('dialog');
      await agentDialog.getByLabel('Name').fill('Clerk');
      await agentDialog.getByRole('checkbox', { name: 'orders__refund_order' }).check();
      await agentDialog.getByText('orders (MCP):').first().waitFor();
      await agentDialog.getByRole('button', { name: 'Save agent' }).click();
      await agentDialog.waitFor({ state: 'hidden' });
      await page.getByRole('table', { name: 'Agents' }).getByText('orders__refund_order').waitFor();

      await page.getByRole('button', { name: 'New rule' }).click();
      const ruleDialog = page.getByRole('dialog');
      await ruleDialog.getByLabel('Name').fill('Refunds');
      // Before an agent is chosen every org tool is listed; a mode set then stays in view, marked.
      await ruleDialog
        .getByRole('radiogroup', { name: 'Approval mode of generateDocument' })
        .getByText('allow', { exact: true })
        .click();
      await ruleDialog.getByLabel('Agent', { exact: true }).click();
      await page.getByRole('option', { name: 'Clerk' }).click();
      // Then the agent's tools are listed, and no other tool of the org.
      await ruleDialog.getByText("not the agent's: set earlier, used if the agent gets it").waitFor();
      const listed = ruleDialog.getByRole('table', { name: 'Approval per tool' }).getByRole('radiogroup');
      expect(await listed.evaluateAll((groups) => groups.map((group) => group.getAttribute('aria-label')))).toEqual([
        'Approval mode of orders__refund_order',
        'Approval mode of generateDocument',
      ]);
      await ruleDialog
        .getByRole('radiogroup', { name: 'Approval mode of orders__refund_order' })
        .getByText('allow', { exact: true })
        .click();
      await ruleDialog.getByRole('button', { name: 'Add argument rule' }).click();
      const rule = ruleDialog.getByRole('group', { name: 'Argument rule 1' });
      await rule.getByLabel('Tool').click();
      await page.getByRole('option', { name: 'orders__refund_order' }).click();
      await rule.getByLabel('Path').fill('/amount');
      await rule.getByLabel('Value').fill('100');
      await capture(page, 'mcp-argument-rule');
      await ruleDialog.getByRole('button', { name: 'Save rule' }).click();
      await ruleDialog.waitFor({ state: 'hidden' });
      // The rules table says what waits despite the tool's allow: the argument rule.
      const rules = page.getByRole('table', { name: 'Action rules' });
      await rules.getByText('1. orders__refund_order: /amount gt 100 → ask').waitFor();
      await rules.getByText("decided by the org's admins").waitFor();
    });

    /** The org's one action rule, as the API gives it now. */
    const savedRule = async () =>
      (await (await app.request('GET', `/orgs/${tenant.org.slug}/action-rules`, { token: tenant.token })).json()).actionRules[0];
    const saved = await savedRule();
    // The mode set before the agent was chosen is kept: it applies if the agent is given the tool.
    expect(saved.approvalRules).toEqual({ orders__refund_order: 'allow', generateDocument: 'allow' });
    expect(saved.argumentRules).toEqual([{ tool: 'orders__refund_order', path: '/amount', op: 'gt', value: 100, mode: 'ask' }]);
    const agents = await (await app.request('GET', `/orgs/${tenant.org.slug}/agents`, { token: tenant.token })).json();
    expect(agents.agents[0].tools).toEqual(['orders__refund_order']);

    await step(page, 'a refund over 100 waits in the inbox, which names the argument rule', async () => {
      const created = await (
        await app.request('POST', `/orgs/${tenant.org.slug}/webhooks`, {
          token: tenant.token,
          body: { name: 'Shop', actionRuleId: saved.id, runAsUserId: tenant.admin.id },
        })
      ).json();
      const target = { path: new URL(created.url).pathname, secret: created.secret, webhook: created.webhook };
      const posted = await postEvent(app, target, { eventType: 'refund', data: {} });
      expect(posted.status).toBe(200);
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Approvals' }).click();
      const row = page
        .getByRole('table', { name: 'Pending approvals' })
        .getByRole('row')
        .filter({ hasText: 'orders__refund_order' });
      await row.getByText('argument rule 1: /amount gt 100 → ask').waitFor();
      await capture(page, 'mcp-approval');
      expect(orders.sideEffects).toEqual([]);
    });

    await step(page, "a rule's tool the org no longer has stays in view when the rule is edited", async () => {
      // As after an MCP server's removal: the saved rule still names orders__cancel_order.
      const changed = await app.request('PATCH', `/orgs/${tenant.org.slug}/action-rules/${saved.id}`, {
        token: tenant.token,
        body: {
          approvalRules: { orders__refund_order: 'allow', orders__cancel_order: 'ask' },
          argumentRules: [{ tool: 'orders__cancel_order', path: '/reason', op: 'exists', mode: 'deny' }],
        },
      });
      expect(changed.status).toBe(200);
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('table', { name: 'Action rules' }).getByRole('button', { name: 'Edit' }).click();
      const ruleDialog = page.getByRole('dialog', { name: 'Edit action rule' });
      await ruleDialog
        .getByText('not a tool of the org now (its MCP server removed, or no longer offering it): set earlier')
        .waitFor();
      expect(
        await ruleDialog
          .getByRole('radiogroup', { name: 'Approval mode of orders__cancel_order' })
          .getByRole('radio', { name: 'ask' })
          .isChecked(),
      ).toBe(true);
      const rule = ruleDialog.getByRole('group', { name: 'Argument rule 1' });
      expect(await rule.getByLabel('Tool').inputValue()).toBe('orders__cancel_order');
      await capture(page, 'rule-form-tool-gone');
      await ruleDialog.getByRole('button', { name: 'Save rule' }).click();
      await ruleDialog.waitFor({ state: 'hidden' });
    });
    const resaved = await savedRule();
    expect(resaved.approvalRules).toEqual({ orders__refund_order: 'allow', orders__cancel_order: 'ask' });
    expect(resaved.argumentRules).toEqual([{ tool: 'orders__cancel_order', path: '/reason', op: 'exists', mode: 'deny' }]);

    await step(page, 'a mode for a tool the agent cannot call is taken out of the rule', async () => {
      await page.getByRole('table', { name: 'Action rules' }).getByRole('button', { name: 'Edit' }).click();
      const ruleDialog = page.getByRole('dialog', { name: 'Edit action rule' });
      // Only that mode had a ✕: the mode of a tool the agent can call is changed, not taken out.
      await ruleDialog.getByRole('button', { name: 'Remove the mode of orders__cancel_order' }).click();
      expect(await ruleDialog.getByRole('button', { name: /^Remove the mode of/ }).count()).toBe(0);
      await ruleDialog.getByRole('button', { name: 'Remove argument rule 1' }).click();
      // With neither a mode nor an argument rule for it, the tool is no longer listed.
      await ruleDialog.getByRole('radiogroup', { name: 'Approval mode of orders__cancel_order' }).waitFor({ state: 'detached' });
      await ruleDialog.getByRole('button', { name: 'Save rule' }).click();
      await ruleDialog.waitFor({ state: 'hidden' });
    });
    const cleaned = await savedRule();
    expect(cleaned.approvalRules).toEqual({ orders__refund_order: 'allow' });
    expect(cleaned.argumentRules).toEqual([]);
    operator.expectNoProblems();
    await operator.close();
  }, 120_000);
});
