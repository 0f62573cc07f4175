import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCallback } from '../../../test/helpers/callbacks.ts';
import { expectCommitWithoutFlush } from '../../../test/helpers/flushless.ts';
import { actionOf, outbox } from '../../../test/helpers/outbox.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook } from '../../../test/helpers/webhooks.ts';
import type { DB } from '../../db/schema.ts';
import { callbackEndpointsRepo } from './callbacks.repo.ts';
import { dispatchRepo, type AttemptRecord, type ClaimedCallback } from './dispatch.repo.ts';

// The outbox's claim and record statements on a database with no dispatcher running (workers: false):
// each test claims only callbacks of its own fresh webhook (the others' endpoints are skipped).
let app: TestApp;
let db: Kysely<DB>;
beforeAll(async () => {
  app = await startTestApp({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }, { workers: false });
  db = app.container.db;
});
afterAll(async () => app?.close());

const LEASE_MS = 60_000;

/** A fresh webhook with `count` endpoints, and a way to claim only their callbacks. */
async function webhookWithEndpoints(count: number) {
  const setup = await setupWebhook(app);
  const endpoints: string[] = [];
  for (let i = 0; i < count; i++)
    endpoints.push((await addCallback(app, setup, { url: `http://127.0.0.1:9/${i}`, events: ['action.completed'] })).id);
  const others = async () =>
    (await db.selectFrom('callbackEndpoints').select('id').where('id', 'not in', endpoints).execute()).map((row) => row.id);
  return {
    setup,
    endpoints,
    claim: async (limit: number, skip: string[] = []) =>
      dispatchRepo.claimDue(db, limit, LEASE_MS, [...(await others()), ...skip]),
  };
}

const succeeded = (claimed: ClaimedCallback[]): AttemptRecord[] =>
  claimed.map((callback) => ({
    deliveryId: callback.id,
    endpointId: callback.endpointId,
    attemptedAt: app.container.clock.now(),
    durationMs: 3,
    statusCode: 200,
    error: null,
    responseBody: 'ok',
    status: 'succeeded',
    delayMs: null,
  }));

const statusOf = async (id: string) =>
  await db.selectFrom('callbackDeliveries').select(['status', 'attemptCount']).where('id', '=', id).executeTakeFirstOrThrow();

describe('claiming due callbacks', () => {
  it('takes the longest due first, at most the limit, each leased (counted, not taken again) until its lease lapses', async () => {
    const { setup, endpoints, claim } = await webhookWithEndpoints(1);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await outbox(db, setup, await actionOf(db, setup), endpoints[0]!, 50 - i));
    await outbox(db, setup, await actionOf(db, setup), endpoints[0]!, -60); // due in a minute

    const first = await claim(3);
    expect(first.map((callback) => callback.id)).toEqual(ids.slice(0, 3));
    expect(first[0]).toMatchObject({ attemptCount: 1, endpointId: endpoints[0], body: '{"type": "action.completed"}' });
    expect((await claim(10)).map((callback) => callback.id)).toEqual(ids.slice(3));
    expect(await claim(10)).toEqual([]);

    // The dispatcher that held ids[0] stopped: once the lease lapses, another takes it, counting a second attempt.
    await sql`update callback_deliveries set next_attempt_at = now() - interval '1 second' where id = ${ids[0]}`.execute(db);
    expect(await claim(10)).toMatchObject([{ id: ids[0], attemptCount: 2 }]);
  });

  it("keeps each action's callbacks to one endpoint in order; other endpoints and actions do not wait", async () => {
    const { setup, endpoints, claim } = await webhookWithEndpoints(2);
    const [a, b] = [await actionOf(db, setup), await actionOf(db, setup)];
    const approval = await outbox(db, setup, a, endpoints[0]!, 30, 'action.pending_approval');
    const completed = await outbox(db, setup, a, endpoints[0]!, 40); // due earlier, but written after
    const otherEndpoint = await outbox(db, setup, a, endpoints[1]!, 20);
    const otherAction = await outbox(db, setup, b, endpoints[0]!, 10);

    const first = await claim(10);
    expect(first.map((callback) => callback.id).sort()).toEqual([approval, otherEndpoint, otherAction].sort());
    expect(await claim(10)).toEqual([]); // `completed` waits for `approval`, in flight
    await dispatchRepo.record(db, succeeded(first), 86_400_000);
    expect((await claim(10)).map((callback) => callback.id)).toEqual([completed]);
  });

  it('skips the endpoints it is told to, and disabled endpoints', async () => {
    const { setup, endpoints, claim } = await webhookWithEndpoints(2);
    const action = await actionOf(db, setup);
    await outbox(db, setup, action, endpoints[0]!, 10);
    const second = await outbox(db, setup, action, endpoints[1]!, 10);
    expect((await claim(10, [endpoints[0]!])).map((callback) => callback.id)).toEqual([second]);

    await db.updateTable('callbackEndpoints').set({ enabled: false }).where('id', '=', endpoints[0]!).execute();
    expect(await claim(10)).toEqual([]);
  });

  it("commits without waiting for the flush, in the claim's own transaction only", async () => {
    const { setup, endpoints } = await webhookWithEndpoints(1);
    const id = await outbox(db, setup, await actionOf(db, setup), endpoints[0]!, 5);
    const others = (await db.selectFrom('callbackEndpoints').select('id').where('id', '<>', endpoints[0]!).execute()).map(
      (row) => row.id,
    );
    const claimed = await expectCommitWithoutFlush(db, (trx) => dispatchRepo.claimDue(trx, 1, LEASE_MS, others));
    expect(claimed.map((callback) => callback.id)).toEqual([id]);
  });

  it('finds the oldest due among thousands, and records a batch of them', async () => {
    const { setup, endpoints, claim } = await webhookWithEndpoints(1);
    // Action bulk-n's callback has been due for n seconds.
    await sql`
      with made as (
        insert into actions (id, org_id, webhook_id, delivery_id, status, event_type, external_id)
        select gen_random_uuid(), ${setup.tenant.org.id}, ${setup.webhook.id}, gen_random_uuid(), 'running', 'order.created', 'bulk-' || n
        from generate_series(1, 3000) as n
        returning id, external_id
      )
      insert into callback_deliveries (id, org_id, endpoint_id, action_id, event_type, payload, next_attempt_at)
      select gen_random_uuid(), ${setup.tenant.org.id}, ${endpoints[0]}, id, 'action.completed', '{}'::jsonb,
        now() - (substr(external_id, 6) || ' seconds')::interval
      from made`.execute(db);

    const claimed = await claim(200);
    const externalIds = await db
      .selectFrom('callbackDeliveries as d')
      .innerJoin('actions as a', 'a.id', 'd.actionId')
      .select(['d.id', 'a.externalId'])
      .where(
        'd.id',
        'in',
        claimed.map((callback) => callback.id),
      )
      .execute();
    const externalIdOf = new Map(externalIds.map((row) => [row.id, row.externalId]));
    expect(claimed.map((callback) => externalIdOf.get(callback.id))).toEqual(
      Array.from({ length: 200 }, (_, i) => `bulk-${3000 - i}`),
    );
    expect(await dispatchRepo.record(db, succeeded(claimed), 86_400_000)).toEqual([]);
    const statuses = await db
      .selectFrom('callbackDeliveries')
      .select((eb) => ['status', eb.fn.countAll<string>().as('count')])
      .where('endpointId', '=', endpoints[0]!)
      .groupBy('status')
      .orderBy('status')
      .execute();
    expect(statuses.map(({ status, count }) => [status, Number(count)])).toEqual([
      ['pending', 2800],
      ['succeeded', 200],
    ]);
  });
});

describe('recording attempts', () => {
  it('keeps a callback failed when its endpoint was disabled during the attempt; the attempt is kept', async () => {
    const { setup, endpoints, claim } = await webhookWithEndpoints(1);
    const id = await outbox(db, setup, await actionOf(db, setup), endpoints[0]!, 5);
    const claimed = await claim(10);
    await callbackEndpointsRepo.disable(db, [endpoints[0]!], 'test');
    expect(await dispatchRepo.record(db, succeeded(claimed), 86_400_000)).toEqual([]);
    expect(await statusOf(id)).toEqual({ status: 'failed', attemptCount: 1 });
    const attempts = await db.selectFrom('callbackAttempts').select(['statusCode']).where('deliveryId', '=', id).execute();
    expect(attempts).toEqual([{ statusCode: 200 }]);
  });

  it('schedules a failed attempt again and marks the endpoint failing; names the endpoints failing for too long', async () => {
    const { setup, endpoints, claim } = await webhookWithEndpoints(1);
    const id = await outbox(db, setup, await actionOf(db, setup), endpoints[0]!, 5);
    const failed = succeeded(await claim(10)).map((attempt) => ({
      ...attempt,
      statusCode: 500,
      error: 'HTTP 500',
      status: 'pending' as const,
      delayMs: 60_000,
    }));
    expect(await dispatchRepo.record(db, failed, 86_400_000)).toEqual([]);
    expect(await statusOf(id)).toEqual({ status: 'pending', attemptCount: 1 });
    expect(await claim(10)).toEqual([]); // due again in a minute
    const endpoint = await db
      .selectFrom('callbackEndpoints')
      .select('failingSince')
      .where('id', '=', endpoints[0]!)
      .executeTakeFirstOrThrow();
    expect(endpoint.failingSince).toBeInstanceOf(Date);

    // Failing since before the limit: the next failure names it.
    await sql`update callback_deliveries set next_attempt_at = now() where id = ${id}`.execute(db);
    const again = succeeded(await claim(10)).map((attempt) => ({
      ...attempt,
      statusCode: 500,
      status: 'pending' as const,
      delayMs: 60_000,
    }));
    expect(await dispatchRepo.record(db, again, 0)).toEqual([endpoints[0]]);
  });
});
