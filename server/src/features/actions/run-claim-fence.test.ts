import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../lib/logger.ts';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { eventually } from '../../../test/helpers/eventually.ts';
import { startFakeModel, toolResults } from '../../../test/helpers/fake-model.ts';
import { captureLog } from '../../../test/helpers/log-capture.ts';
import { startTestMcpServer, type TestMcpServer } from '../../../test/helpers/mcp-server.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import { POLL_FOR_DUE_WORK, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';

/**
 * A runner that stalled past its lease (a paused process, a blocked event loop) found out that another
 * claim had taken its action only at its next lease renewal, or when a write of its conflicted with
 * the other runner's: a step it wrote before would be stored, and a call that may not be repeated,
 * started with that step, would be sent. Each of a run's writes now carries its claim's token and
 * is refused whole when the action has another's: the stalled runner stores nothing and sends nothing.
 */
let app: TestApp;
let model: FakeModel;
let orders: TestMcpServer;
const log = captureLog(loggerOptions('warn'));
beforeAll(async () => {
  model = await startFakeModel();
  orders = await startTestMcpServer();
  // A lease of a minute: renewals (every 20 s) do not tell the run of the other claim within the test.
  const env = { ...model.env, ...POLL_FOR_DUE_WORK, MCP_ALLOW_PRIVATE_NETWORKS: 'true', ACTION_LEASE_SECONDS: '60' };
  app = await startTestApp(env, { logger: log.logger });
});
afterAll(async () => {
  await app?.close();
  await orders?.close();
  await model?.close();
});

describe('a run whose action another claim took while it waited for the model', () => {
  it('stores nothing and sends no call that may not be repeated; the claim that holds the action runs it once', async () => {
    const setup = await setupWebhook(app, {}, { approvalRules: { orders__refund_order: 'allow' } });
    const { org, token } = setup.tenant;
    const { db } = app.container;
    await app.request('POST', `/orgs/${org.slug}/mcp-servers`, { token, body: { name: 'orders', url: orders.url } });
    await app.request('PATCH', `/orgs/${org.slug}/agents/${setup.agentId}`, { token, body: { tools: ['orders__refund_order'] } });
    let asked = 0;
    model.script(async (request) => {
      if (toolResults(request).length > 0) return { text: 'refunded' };
      // The first run's model call: meanwhile another runner claimed the action (its lease running), as
      // it would once this run's lease had lapsed. The answer reaches the first run all the same.
      if (asked++ === 0)
        await sql`update actions set run_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour',
          takeovers = takeovers + 1 where org_id = ${org.id}`.execute(db);
      // A refund is destructive: started (a write) with its step, before its request leaves.
      return { toolCalls: [{ name: 'orders__refund_order', arguments: { orderId: 'A-1', amount: 10 } }] };
    });
    const actionId = await runEvent(app, setup);
    const refunds = () => orders.sideEffects.filter((effect) => effect.actionId === actionId);

    await eventually('the first run to stop', () =>
      log.lines.some((line) => line.includes(actionId) && line.includes('another runner continued this action; stopping'))
        ? true
        : undefined,
    );
    expect(refunds()).toHaveLength(0);
    const stored = await db
      .selectFrom('actions')
      .select(['status', 'threadId'])
      .where('id', '=', actionId)
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ status: 'running', threadId: null });
    expect(await db.selectFrom('toolCalls').select('id').where('actionId', '=', actionId).execute()).toEqual([]);

    // The other runner dies in its turn: its lease lapses, and a claim of this process runs the action.
    await sql`update actions set lease_expires_at = now() - interval '1 second' where id = ${actionId}`.execute(db);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.execution.toolCalls).toEqual([
      expect.objectContaining({ toolName: 'orders__refund_order', status: 'completed', approval: 'not_required' }),
    ]);
    expect(refunds()).toHaveLength(1);
    expect(asked).toBe(2);
  });
});

describe('a run that fails while another claim holds its action', () => {
  it('leaves the action to that claim: it is not failed, and the run stops without an error', async () => {
    const setup = await setupWebhook(app);
    const { org } = setup.tenant;
    const { db } = app.container;
    let asked = 0;
    model.script(async () => {
      if (asked++ > 0) return { text: 'done' };
      await sql`update actions set run_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour',
        takeovers = takeovers + 1 where org_id = ${org.id}`.execute(db);
      // A refusal that is not retried: the first run fails the action, with a write its claim no longer fences.
      return { error: { status: 400, message: 'The request was malformed' } };
    });
    const actionId = await runEvent(app, setup);
    const linesOf = () => log.lines.filter((line) => line.includes(actionId));

    await eventually('the first run to stop', () =>
      linesOf().some((line) => line.includes('another runner continued this action; stopping')) ? true : undefined,
    );
    expect(linesOf().filter((line) => line.includes('"level":50') || line.includes('lease lapses'))).toEqual([]);
    const stored = await db
      .selectFrom('actions')
      .select(['status', 'error'])
      .where('id', '=', actionId)
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ status: 'running', error: null });

    await sql`update actions set lease_expires_at = now() - interval '1 second' where id = ${actionId}`.execute(db);
    const done = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(asked).toBe(2);
  });
});
