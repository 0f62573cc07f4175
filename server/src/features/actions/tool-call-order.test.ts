import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { approveStaged, auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { toolResults } from '../../../test/helpers/fake-model.ts';
import { type FakeModel, useAppWithModel } from '../../../test/helpers/model-app.ts';
import type { TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';
import { encodeCursor } from '../../lib/pagination.ts';
import { down, up } from '../../db/migrations/0038_tool_call_position.ts';

let app: TestApp;
let model: FakeModel;
useAppWithModel({ ACTION_MAX_STEPS: '4' }, (started) => {
  ({ app, model } = started);
});

const document = (title: string) => ({ name: 'generateDocument', arguments: { title, content: `# ${title}` } });

/** Step one proposes G, F, E, D, C and B at once (C waits for a person), step two A. */
function scriptSteps(fake: FakeModel) {
  fake.script((request) => {
    const seen = toolResults(request).length;
    if (seen === 0) return { toolCalls: ['G', 'F', 'E', 'D', 'C', 'B'].map(document) };
    if (seen === 6) return { toolCalls: [document('A')] };
    return { text: 'Done.' };
  });
}

async function runSteps(setup: WebhookSetup): Promise<string> {
  scriptSteps(model);
  const actionId = await runEvent(app, setup);
  expect((await waitForAction(app, auth(setup), actionId, ['pending_approval', 'failed'])).status).toBe('pending_approval');
  await approveStaged(app, setup, actionId);
  expect((await waitForAction(app, auth(setup), actionId, ['completed', 'failed'])).status).toBe('completed');
  return actionId;
}

const titlesOf = (calls: Array<{ input: { title: string } }>) => calls.map((call) => call.input.title);

describe("an action's tool calls, in the order the model proposed them", () => {
  const waitsForC = {
    argumentRules: [{ tool: 'generateDocument', path: '/title', op: 'eq', value: 'C', mode: 'ask' }],
  };

  it('are listed so in the ledger, across a step resumed after a decision', async () => {
    const setup = await setupWebhook(app, {}, waitsForC);
    const actionId = await runSteps(setup);
    const row = await waitForAction(app, auth(setup), actionId, ['completed']);
    // The calls of one step share their request time, and their row ids are random.
    expect(titlesOf(row.execution.toolCalls)).toEqual(['G', 'F', 'E', 'D', 'C', 'B', 'A']);
    // The model saw the results in the order it asked for them.
    const results = toolResults(model.requests.at(-1)!).map((result) => result.toolCallId);
    expect(results).toEqual(row.execution.toolCalls.map((call: { toolCallId: string }) => call.toolCallId));
  });

  it('are numbered from their conversation by migration 0038 for the calls stored before it', async () => {
    const setup = await setupWebhook(app, {}, waitsForC);
    const actionId = await runSteps(setup);
    const db = app.container.database.db as unknown as Kysely<unknown>;
    // As the migrator found a database of before: no position, and requested_at as it was (equal within a step).
    await down(db);
    await up(db);
    const { rows } = await sql<{ title: string; position: number }>`
      select input ->> 'title' as title, position from tool_calls where action_id = ${actionId} order by position`.execute(db);
    expect(rows).toEqual(['G', 'F', 'E', 'D', 'C', 'B', 'A'].map((title, position) => ({ title, position })));
  });

  it('are listed so by the approvals inbox, newest step first, page by page', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
    model.script(() => ({ toolCalls: ['G', 'F', 'E', 'D', 'C', 'B'].map(document) }));
    const waiting = async () => {
      const actionId = await runEvent(app, setup);
      expect((await waitForAction(app, auth(setup), actionId, ['pending_approval', 'failed'])).status).toBe('pending_approval');
      return actionId;
    };
    const first = await waiting();
    const second = await waiting();
    const listed: Array<{ actionId: string; title: string }> = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=4${cursor ? `&cursor=${cursor}` : ''}`;
      const response = await app.request('GET', `/orgs/${setup.tenant.org.slug}/approvals${query}`, {
        token: setup.tenant.token,
      });
      const page = (await response.json()) as {
        approvals: Array<{ actionId: string; input: { title: string } }>;
        nextCursor: string | null;
      };
      listed.push(...page.approvals.map((call) => ({ actionId: call.actionId, title: call.input.title })));
      cursor = page.nextCursor;
    } while (cursor);
    const titles = ['G', 'F', 'E', 'D', 'C', 'B'];
    expect(listed).toEqual([second, first].flatMap((actionId) => titles.map((title) => ({ actionId, title }))));
  });

  it("are placed by a cursor's call only when it is the organization's: another's reads as a call that is gone", async () => {
    model.script(() => ({ toolCalls: ['C', 'B', 'A'].map(document) }));
    const waiting = async () => {
      const setup = await setupWebhook(app, {}, { approvalRules: { generateDocument: 'ask' } });
      const actionId = await runEvent(app, setup);
      expect((await waitForAction(app, auth(setup), actionId, ['pending_approval', 'failed'])).status).toBe('pending_approval');
      return { setup, actionId };
    };
    const { db } = app.container;
    const callsOf = (actionId: string) =>
      db.selectFrom('toolCalls').select(['id', 'requestedAt']).where('actionId', '=', actionId).execute();
    // Read outside its organization, the call of the higher action would place the lower one's three
    // calls (requested at the cursor's moment) after it.
    const [lower, higher] = (await Promise.all([waiting(), waiting()])).sort((a, b) => (a.actionId < b.actionId ? -1 : 1));
    const [own] = await callsOf(lower!.actionId);
    const [foreign] = await callsOf(higher!.actionId);
    const listAfter = async (id: string) => {
      const cursor = encodeCursor({ createdAt: own!.requestedAt, id });
      const response = await app.request('GET', `/orgs/${lower!.setup.tenant.org.slug}/approvals?cursor=${cursor}`, {
        token: lower!.setup.tenant.token,
      });
      return { status: response.status, body: await response.json() };
    };
    // A call that is gone places nothing: the calls requested at the cursor's moment are not listed after it.
    const gone = await listAfter(crypto.randomUUID());
    expect(gone).toEqual({ status: 200, body: { approvals: [], nextCursor: null } });
    expect(await listAfter(foreign!.id)).toEqual(gone);
  });
});
