import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { startCallbackReceiver } from '../../../test/helpers/callback-receiver.ts';
import { addCallback, approveStaged, auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { createTenant, createUser, signIn } from '../../../test/helpers/factories.ts';
import { calledTools, type ChatRequest } from '../../../test/helpers/fake-model.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

let app: TestApp;
let model: FakeModel;
let orders: TestMcpServer;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
beforeAll(async () => {
  orders = await startTestMcpServer();
  receiver = await startCallbackReceiver();
});
afterAll(async () => {
  await orders?.close();
  await receiver?.close();
});
useAppWithModel({ MCP_ALLOW_PRIVATE_NETWORKS: 'true', CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }, (started) => {
  ({ app, model } = started);
});

const systemOf = (request: ChatRequest) => request.messages.find((message) => message.role === 'system')?.content ?? '';

/**
 * A model that does what the agent's instructions say: "Refund N." refunds N on the event's order,
 * then reports what it did, quoting the instructions it ran with.
 */
function followInstructions(request: ChatRequest) {
  const amount = Number(/Refund (\d+)\./.exec(systemOf(request))?.[1] ?? 0);
  if (!calledTools(request)) return { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'A-1', amount } }] };
  return { text: `Refunded ${amount}` };
}

/** A tenant whose agent refunds through the order system's MCP server, with refunds in `mode`. */
async function setup(mode: 'allow' | 'ask'): Promise<WebhookSetup> {
  const made = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: mode } });
  const { org, token } = made.tenant;
  expect(
    (await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: orders.url } })).status,
  ).toBe(201);
  const patched = await app.request('PATCH', `/orgs/${org.slug}/agents/${made.agentId}`, {
    token,
    body: { instructions: 'Refund 30.', tools: ['orders__refund_order'], changeNote: 'refunds' },
  });
  expect(patched.status).toBe(200);
  return made;
}

function api(made: WebhookSetup) {
  const { org, token } = made.tenant;
  const base = `/orgs/${org.slug}/agents/${made.agentId}`;
  return {
    base,
    get: async (path: string) => app.request('GET', `${base}${path}`, { token }),
    post: async (path: string, body?: unknown) => app.request('POST', `${base}${path}`, { token, body }),
    patch: async (body: unknown) => app.request('PATCH', base, { token, body }),
  };
}

const refundsOf = (row: any) =>
  orders.sideEffects.filter((effect) => row.execution.toolCalls.some((call: any) => call.toolCallId === effect.toolCallId));

describe('agent versions', () => {
  it('create, PATCH, draft, publish, roll back, list, get, diff; a draft is not live', async () => {
    const made = await setup('allow');
    const agents = api(made);
    model.script(followInstructions);

    // Created as version 1; the PATCH in setup made version 2, live; a PATCH of the name makes none.
    expect(await (await agents.patch({ name: 'Refunder' })).json()).toMatchObject({ name: 'Refunder', liveVersion: 2 });
    // The same behaviour again makes no version either.
    expect(await (await agents.patch({ instructions: 'Refund 30.' })).json()).toMatchObject({ liveVersion: 2 });

    const draft = await agents.post('/versions', { instructions: 'Refund 50.', changeNote: 'bigger refunds' });
    expect(draft.status).toBe(201);
    expect((await draft.json()).version).toMatchObject({
      version: 3,
      live: false,
      instructions: 'Refund 50.',
      tools: ['orders__refund_order'],
      changeNote: 'bigger refunds',
      createdBy: made.tenant.admin.id,
      lastPublishedAt: null,
      lastReplacedAt: null,
    });
    expect(await (await agents.get('')).json()).toMatchObject({ liveVersion: 2, instructions: 'Refund 30.' });
    // A draft that does what a version does already is none: the live one, or another draft.
    const unchanged = await agents.post('/versions', { changeNote: 'nothing' });
    expect({ status: unchanged.status, body: await unchanged.json() }).toEqual({
      status: 409,
      body: {
        code: 'conflict',
        error: 'The draft changes nothing: version 2, the live one, has the same instructions, model and tools',
      },
    });
    const again = await agents.post('/versions', { instructions: 'Refund 50.', tools: ['orders__refund_order'] });
    expect(again.status).toBe(409);
    expect((await again.json()).error).toMatch(
      /^The draft changes nothing: version 3 has the same .+ \(publish it to make it live\)$/,
    );

    // A new action runs with the live version, not the draft.
    const first = await runEvent(app, made);
    const firstRow = await waitForAction(app, auth(made), first, ['completed', 'failed']);
    expect(firstRow).toMatchObject({ status: 'completed', agentVersion: 2, agentLiveVersion: 2 });
    expect(refundsOf(firstRow).map((effect) => effect.arguments)).toEqual([{ orderId: 'A-1', amount: 30 }]);

    const published = await agents.post('/versions/3/publish');
    expect(published.status).toBe(200);
    expect(await published.json()).toMatchObject({ liveVersion: 3, instructions: 'Refund 50.' });
    const second = await runEvent(app, made);
    const secondRow = await waitForAction(app, auth(made), second, ['completed', 'failed']);
    expect(secondRow).toMatchObject({ agentVersion: 3, execution: { result: { text: 'Refunded 50' } } });

    // Rolling back is publishing an older one.
    expect(await (await agents.post('/versions/2/publish')).json()).toMatchObject({ liveVersion: 2, instructions: 'Refund 30.' });
    // Publishing the live version again changes nothing and records nothing.
    expect((await agents.post('/versions/2/publish')).status).toBe(200);

    const listed = await (await agents.get('/versions?limit=2')).json();
    expect(listed.versions.map((v: any) => [v.version, v.live])).toEqual([
      [3, false],
      [2, true],
    ]);
    const rest = await (await agents.get(`/versions?limit=2&cursor=${listed.nextCursor}`)).json();
    expect(rest).toMatchObject({
      versions: [{ version: 1, instructions: 'Help.', tools: ['generateDocument'] }],
      nextCursor: null,
    });
    expect(await (await agents.get('/versions/1')).json()).toMatchObject({ version: 1, live: false, changeNote: null });

    const diff = await (await agents.get('/versions/3/diff?against=1')).json();
    expect(diff).toEqual({
      version: 3,
      against: 1,
      changes: [
        {
          field: 'instructions',
          from: 'Help.',
          to: 'Refund 50.',
          lines: [
            { op: 'remove', text: 'Help.' },
            { op: 'add', text: 'Refund 50.' },
          ],
        },
        { field: 'tools', from: ['generateDocument'], to: ['orders__refund_order'] },
      ],
    });
    expect((await (await agents.get('/versions/2/diff?against=2')).json()).changes).toEqual([]);
    // A line added after the last one: the last one is kept, not removed and added again.
    await agents.post('/versions', { instructions: 'Refund 30.\nAsk first.' });
    expect((await (await agents.get('/versions/4/diff?against=2')).json()).changes[0].lines).toEqual([
      { op: 'keep', text: 'Refund 30.' },
      { op: 'add', text: 'Ask first.' },
    ]);

    const { publications } = await (await agents.get('/publications')).json();
    expect(publications.map((p: any) => [p.version, p.previousVersion, p.publishedBy])).toEqual([
      [2, 3, made.tenant.admin.id],
      [3, 2, made.tenant.admin.id],
      [2, 1, made.tenant.admin.id],
      [1, null, made.tenant.admin.id],
    ]);
    // Each version says when it was last made live, and when that ended: a draft never was; version 3 was,
    // until it was rolled back from; version 2, live twice, is live now.
    const [rolledBack, published3, published2, published1] = publications.map((p: any) => p.publishedAt);
    const all = await (await agents.get('/versions')).json();
    expect(all.versions.map((v: any) => [v.version, v.live, v.lastPublishedAt, v.lastReplacedAt])).toEqual([
      [4, false, null, null],
      [3, false, published3, rolledBack],
      [2, true, rolledBack, null],
      [1, false, published1, published2],
    ]);
  });

  it("a blank model name is refused where an agent or a draft names one; null is the server's model", async () => {
    const made = await setup('allow');
    const agents = api(made);
    const { org, token } = made.tenant;
    // Blank, it would name no model and still not be null: actions would fail with "the agent has no model".
    for (const model of ['', '   ']) {
      const created = await app.request('POST', `/orgs/${org.slug}/agents`, { token, body: { name: 'Blank', model } });
      const patched = await agents.patch({ model });
      const drafted = await agents.post('/versions', { model });
      for (const refused of [created, patched, drafted]) {
        expect(refused.status).toBe(400);
        expect(await refused.json()).toMatchObject({ code: 'validation_failed', error: expect.stringContaining('model') });
      }
    }
    expect(await (await agents.get('')).json()).toMatchObject({ liveVersion: 2, model: null });
    // A name with spaces around it is the name.
    expect(await (await agents.patch({ model: ' scripted-model ' })).json()).toMatchObject({
      liveVersion: 3,
      model: 'scripted-model',
    });
    expect(await (await agents.patch({ model: null })).json()).toMatchObject({ liveVersion: 4, model: null });
  });

  it('an action paused for approval keeps its version when another is published, and so do its callbacks', async () => {
    const made = await setup('ask');
    const agents = api(made);
    await addCallback(app, made, { url: receiver.url(`/versions-${made.agentId}`) });
    model.script(followInstructions);
    const actionId = await runEvent(app, made);
    await waitForAction(app, auth(made), actionId, ['pending_approval']);

    // What the agent does changes while the action waits: other instructions, and another tool.
    const changed = await agents.patch({ instructions: 'Refund 80.', tools: ['generateDocument'] });
    expect(await changed.json()).toMatchObject({ liveVersion: 3 });
    await approveStaged(app, made, actionId);
    const done = await waitForAction(app, auth(made), actionId, ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', agentVersion: 2, agentLiveVersion: 3 });
    expect(done.execution.result.text).toBe('Refunded 30');
    expect(refundsOf(done).map((effect) => effect.arguments)).toEqual([{ orderId: 'A-1', amount: 30 }]);
    // The model step after the approval ran with version 2's instructions and tools.
    const last = model.requests.filter((request) => systemOf(request).includes('Refund')).at(-1)!;
    expect(systemOf(last)).toContain('Refund 30.');
    expect(last.tools?.map((tool) => tool.function.name)).toContain('orders__refund_order');

    const callbacks = await eventually('the callbacks of pending_approval, approved and completed', () => {
      const got = receiver.received.filter((callback) => callback.path === `/versions-${made.agentId}`);
      return got.length >= 3 ? got : undefined;
    });
    expect(callbacks.map((callback) => JSON.parse(callback.body).data.agentVersion)).toEqual([2, 2, 2]);
    const list = await (
      await app.request('GET', `/orgs/${made.tenant.org.slug}/ledger?kind=action`, { token: made.tenant.token })
    ).json();
    expect(list.rows.find((row: any) => row.actionId === actionId)).toMatchObject({ agentVersion: 2, agentLiveVersion: 3 });
  });

  it("refuses bad input with a clear 4xx, and another org's admin or a member who is not an admin", async () => {
    const made = await setup('allow');
    const agents = api(made);
    const cases: Array<[() => Promise<any>, number, RegExp]> = [
      [() => agents.get('/versions/9'), 404, /no version 9/],
      [() => agents.get('/versions/0'), 400, /version/],
      [() => agents.get('/versions/abc'), 400, /^params\/version: expected a whole number$/],
      [() => agents.get('/versions/2/diff?against=9'), 404, /no version 9/],
      [() => agents.get('/versions/2/diff'), 400, /^querystring\/against: expected a whole number$/],
      [() => agents.get('/versions/2/diff?against=1.5'), 400, /^querystring\/against: expected a whole number$/],
      [() => agents.get('/versions?cursor=bm9wZQ'), 400, /cursor/],
      [() => agents.post('/versions/9/publish'), 404, /no version 9/],
      [() => agents.post('/versions', { tools: ['nope'] }), 400, /unknown tool "nope"/],
      [() => agents.post('/versions', { instructions: 'x', name: 'not a behaviour field' }), 400, /name/],
      [() => agents.post('/versions', { provider: 'bogus' }), 400, /provider/],
      [() => agents.post('/versions', { instructions: 'x'.repeat(50_001) }), 400, /instructions/],
      // A problem with the body as a whole is the body's, not a field's named "".
      [() => agents.patch({}), 400, /^body: nothing to change$/],
      [() => agents.patch([]), 400, /^body: Invalid input: expected object, received array$/],
      [
        () =>
          app.request('GET', `/orgs/${made.tenant.org.slug}/agents/${crypto.randomUUID()}/versions`, {
            token: made.tenant.token,
          }),
        404,
        /Agent/,
      ],
    ];
    for (const [request, status, message] of cases) {
      const response = await request();
      const body = await response.json();
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(body.error, JSON.stringify(body)).toMatch(message);
    }

    // A draft that names a tool the org has since removed cannot be published.
    const draft = await (await agents.post('/versions', { tools: ['orders__refund_order', 'orders__lookup_order'] })).json();
    const servers = await (
      await app.request('GET', `/orgs/${made.tenant.org.slug}/mcp-servers`, { token: made.tenant.token })
    ).json();
    // The live version and the rule name the server's tools: it is renamed only once neither does.
    expect(await agents.patch({ tools: ['generateDocument'] })).toMatchObject({ status: 200 });
    const rule = await app.request('PATCH', `/orgs/${made.tenant.org.slug}/action-rules/${made.ruleId}`, {
      token: made.tenant.token,
      body: { approvalRules: { generateDocument: 'allow' } },
    });
    expect(rule.status).toBe(200);
    const renamed = await app.request('PATCH', `/orgs/${made.tenant.org.slug}/mcp-servers/${servers.mcpServers[0].id}`, {
      token: made.tenant.token,
      body: { name: 'shop' },
    });
    expect(renamed.status).toBe(200);
    const refused = await agents.post(`/versions/${draft.version.version}/publish`);
    expect(refused.status).toBe(400);
    expect((await refused.json()).error).toMatch(
      /version 3's tools: unknown tools "orders__refund_order", "orders__lookup_order"/,
    );

    // Another org's admin sees nothing of this agent; a member who is not an admin may not look.
    const other = await createTenant(app);
    const foreign = await app.request('GET', `/orgs/${other.org.slug}/agents/${made.agentId}/versions`, { token: other.token });
    expect(foreign.status).toBe(404);
    const intruder = await app.request('GET', `/orgs/${made.tenant.org.slug}/agents/${made.agentId}/versions`, {
      token: other.token,
    });
    expect(intruder.status).toBe(404); // an org one is not a member of is not shown to exist
    const guest = await createUser(app, { role: 'Guest', org: made.tenant.org.slug });
    const asGuest = await app.request('POST', `${agents.base}/versions/1/publish`, { token: await signIn(app, guest) });
    expect(asGuest.status).toBe(403);
    expect(await (await agents.get('')).json()).toMatchObject({ liveVersion: 4 });
  });
});
