import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { createUser, signIn } from '../../../test/helpers/factories.ts';
import { calledTools, startFakeModel } from '../../../test/helpers/fake-model.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';

/** Usage per model call, as the (loopback) provider reports it, priced by MODEL_PRICES; /usage sums it. */
let app: TestApp;
let model: Awaited<ReturnType<typeof startFakeModel>>;
const DAY = 86_400_000;
beforeAll(async () => {
  model = await startFakeModel();
  app = await startTestApp({
    ...model.env,
    MODEL_PRICES: JSON.stringify({ 'scripted-model': { input: 2, output: 10, cachedInput: 1 } }),
  });
});
afterAll(async () => {
  await app?.close();
  await model?.close();
});

const usageOf = async (token: string, org: string, query: string) => {
  const response = await app.request('GET', `/orgs/${org}/usage?${query}`, { token });
  expect(response.status).toBe(200);
  return response.json();
};

describe('usage', () => {
  it("a long action's ledger row totals every model call (in SQL), and lists the first 500", async () => {
    const setup = await setupWebhook(app);
    model.script(() => ({ text: 'ok', usage: { prompt: 10, completion: 1 } }));
    const row = await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed']);
    // The rest of a run of 700 model calls (as many steps would write them), recorded after the first.
    const start = new Date(row.createdAt).getTime() + 1000;
    await app.container.db
      .insertInto('modelCalls')
      .values(
        Array.from({ length: 699 }, (_, i) => ({
          id: crypto.randomUUID(),
          orgId: setup.tenant.org.id,
          actionId: row.id,
          agentId: setup.agentId,
          userId: setup.tenant.admin.id,
          provider: 'openai-compatible',
          model: 'scripted-model',
          inputTokens: 10,
          outputTokens: 1,
          cachedInputTokens: 0,
          costUsd: 0.00003,
          durationMs: 2,
          createdAt: new Date(start + i),
        })),
      )
      .execute();
    const { execution } = await (
      await app.request('GET', `/orgs/${setup.tenant.org.slug}/ledger/${row.id}`, { token: setup.tenant.token })
    ).json();
    expect(execution.usage).toMatchObject({
      calls: 700,
      inputTokens: 7000,
      outputTokens: 700,
      totalTokens: 7700,
      unpricedCalls: 0,
    });
    expect(execution.usage.costUsd).toBeCloseTo(0.021, 10);
    expect(execution.usage.modelCalls).toHaveLength(500);
  });

  it("records each model call's tokens, time and cost; the ledger row and /usage sum them per agent, model, user and day", async () => {
    app.clock.reset();
    const setup = await setupWebhook(app);
    const { token, org } = auth(setup);
    model.script((request) =>
      request.model !== 'scripted-model'
        ? { text: 'cheap', usage: { prompt: 50, completion: 7 } }
        : calledTools(request)
          ? { text: 'Filed.', usage: { prompt: 1500, completion: 100 } }
          : {
              toolCalls: [{ name: 'generateDocument', arguments: { title: 'A', content: 'a' } }],
              usage: { prompt: 1000, completion: 200, cached: 400 },
              delayMs: 60,
            },
    );
    const first = await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed']);
    expect(first.status).toBe('completed');
    // (600 × 2 + 400 × 1 + 200 × 10) + (1500 × 2 + 100 × 10) dollars per million tokens
    const cost = 7600 / 1_000_000;
    expect(first.execution.usage).toMatchObject({
      calls: 2,
      inputTokens: 2500,
      outputTokens: 300,
      cachedInputTokens: 400,
      totalTokens: 2800,
      unpricedCalls: 0,
    });
    expect(first.execution.usage.costUsd).toBeCloseTo(cost, 10);
    expect(first.execution.usage.modelCalls).toEqual([
      expect.objectContaining({
        provider: 'openai-compatible',
        model: 'scripted-model',
        inputTokens: 1000,
        outputTokens: 200,
        cachedInputTokens: 400,
      }),
      expect.objectContaining({
        provider: 'openai-compatible',
        model: 'scripted-model',
        inputTokens: 1500,
        outputTokens: 100,
        cachedInputTokens: 0,
      }),
    ]);
    // The model took its time over the first call (60 ms): the call's duration is measured around it.
    expect(first.execution.usage.modelCalls[0].durationMs).toBeGreaterThanOrEqual(60);

    // The next day, another agent on a model without a price, run as another member.
    app.clock.advance(DAY);
    const member = await createUser(app, { org: setup.tenant.org.slug });
    const other = await (
      await app.request('POST', `/orgs/${org}/agents`, { token, body: { name: 'Cheap', model: 'unpriced-model' } })
    ).json();
    const rule = await (
      await app.request('POST', `/orgs/${org}/action-rules`, { token, body: { name: 'Cheap', agentId: other.id } })
    ).json();
    const second = await waitForAction(
      app,
      auth(setup),
      await runEvent(app, setup, { actionRuleId: rule.id, userId: member.id }),
      ['completed', 'failed'],
    );
    expect(second.status).toBe('completed');
    expect(second.execution.usage).toMatchObject({ calls: 1, inputTokens: 50, outputTokens: 7, costUsd: null, unpricedCalls: 1 });

    const from = new Date(app.clock.now().getTime() - 2 * DAY).toISOString();
    const totals = {
      calls: 3,
      inputTokens: 2550,
      outputTokens: 307,
      cachedInputTokens: 400,
      totalTokens: 2857,
      unpricedCalls: 1,
    };
    const byAgent = await usageOf(token, org, `groupBy=agent&from=${from}`);
    expect(byAgent.totals).toMatchObject(totals);
    expect(byAgent.totals.costUsd).toBeCloseTo(cost, 10);
    expect(byAgent.groups).toHaveLength(2);
    expect(byAgent.groups).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: setup.agentId, label: 'Helper', calls: 2, totalTokens: 2800, unpricedCalls: 0 }),
        expect.objectContaining({ key: other.id, label: 'Cheap', calls: 1, totalTokens: 57, costUsd: null, unpricedCalls: 1 }),
      ]),
    );
    const byModel = await usageOf(token, org, `groupBy=model&from=${from}`);
    expect(byModel.groups.map((group: { key: string; calls: number }) => [group.key, group.calls])).toEqual([
      ['openai-compatible/scripted-model', 2],
      ['openai-compatible/unpriced-model', 1],
    ]);
    const byUser = await usageOf(token, org, `groupBy=user&from=${from}`);
    expect(byUser.groups).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: setup.tenant.admin.id, label: setup.tenant.admin.email, calls: 2 }),
        expect.objectContaining({ key: member.id, label: member.email, calls: 1 }),
      ]),
    );
    // Per UTC day, every day of the range listed (those without calls at zero).
    const byDay = await usageOf(token, org, `groupBy=day&from=${from.slice(0, 10)}`);
    const today = app.clock.now().toISOString().slice(0, 10);
    const yesterday = new Date(app.clock.now().getTime() - DAY).toISOString().slice(0, 10);
    expect(byDay.groups.map((group: { key: string; calls: number }) => [group.key, group.calls])).toEqual([
      [new Date(app.clock.now().getTime() - 2 * DAY).toISOString().slice(0, 10), 0],
      [yesterday, 2],
      [today, 1],
    ]);
    // A range that ends before the second day sees the first action only.
    const before = await usageOf(token, org, `groupBy=agent&from=${from}&to=${today}`);
    expect(before.totals).toMatchObject({ calls: 2, totalTokens: 2800 });
  });

  it("shows a cost budget's spend and /usage's sums as the dollars they are, not floating-point sums", async () => {
    const setup = await setupWebhook(app);
    const { slug } = setup.tenant.org;
    const { token } = setup.tenant;
    const budget = { period: 'day', maxCostUsd: 1, onExceed: 'fail' };
    const patched = await app.request('PATCH', `/orgs/${slug}/agents/${setup.agentId}`, { token, body: { budget } });
    expect(patched.status).toBe(200);
    // Each call costs 0.00007 (10 input tokens at 2, 5 output at 10, per million): added up as floats,
    // three of them were 0.00020999999999999995.
    model.script(() => ({ text: 'ok', usage: { prompt: 10, completion: 5 } }));
    for (let i = 0; i < 3; i++)
      expect((await waitForAction(app, auth(setup), await runEvent(app, setup), ['completed', 'failed'])).status).toBe(
        'completed',
      );
    const { agents } = await (await app.request('GET', `/orgs/${slug}/budgets`, { token })).json();
    expect(agents).toEqual([expect.objectContaining({ agentId: setup.agentId, spentCostUsd: 0.00021 })]);
    expect((await usageOf(token, slug, 'groupBy=agent')).totals.costUsd).toBe(0.00021);
  });

  it("is for the org's admins only, and refuses a bad range or grouping with 400", async () => {
    const setup = await setupWebhook(app);
    const { token, org } = auth(setup);
    const member = await createUser(app, { org, role: 'Guest' });
    const stranger = await setupWebhook(app);
    expect((await app.request('GET', `/orgs/${org}/usage`)).status).toBe(401);
    expect((await app.request('GET', `/orgs/${org}/usage`, { token: await signIn(app, member) })).status).toBe(403);
    const strangers = await app.request('GET', `/orgs/${org}/usage`, { token: stranger.tenant.token });
    // Another org's admin is told nothing of this org, not even that it exists.
    expect(strangers.status).toBe(404);
    expect(await strangers.json()).toEqual({ code: 'not_found', error: 'Organization not found' });
    for (const query of [
      'groupBy=week',
      'from=yesterday',
      'to=2026-13-01',
      'from=2026-01-02&to=2026-01-01',
      'from=2026-01-01&to=2026-01-01',
      'from=2024-01-01&to=2026-01-01',
      'from=2026-01-01T00:00:00',
      `from=${'9'.repeat(5000)}`,
    ]) {
      const response = await app.request('GET', `/orgs/${org}/usage?${query}`, { token });
      expect(response.status, query).toBe(400);
      expect(await response.json(), query).toMatchObject({ code: 'validation_failed', error: expect.any(String) });
    }
    const undated = await app.request('GET', `/orgs/${org}/usage?from=2026-01-01T00:00:00`, { token });
    expect((await undated.json()).error).toBe(
      'querystring/from: expected an ISO date (2026-11-01) or a date-time with its offset (2026-11-01T09:30:00Z)',
    );
    const empty = await usageOf(token, org, 'groupBy=model');
    expect(empty).toMatchObject({ groupBy: 'model', groups: [], totals: { calls: 0, totalTokens: 0, costUsd: null } });
  });
});
