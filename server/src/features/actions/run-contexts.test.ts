import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';
import { actionsRepo } from './actions.repo.ts';

/** What a run reads of its action, agent and rule: read at every claim, so it must not be planned at every read. */
let app: TestApp;
let setup: WebhookSetup;
beforeAll(async () => {
  // No worker: the actions stay queued, and only the test reads them.
  app = await startTestApp({}, { workers: false });
  setup = await setupWebhook(app);
});
afterAll(async () => {
  await app?.close();
});

async function queuedActions(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await postEvent(app, setup, { eventType: 'order.created', externalId: randomUUID() });
    ids.push((await response.json()).actionId);
  }
  return ids;
}

describe('actionsRepo.runContexts', () => {
  it('reads each action with its agent and rule, and nothing for an unknown id', async () => {
    const ids = await queuedActions(2);
    const rows = await actionsRepo.runContexts(app.container.db, [...ids, randomUUID()], 'openai-compatible');
    expect(rows.map((row) => row.id).sort()).toEqual([...ids].sort());
    for (const row of rows) {
      expect(row).toMatchObject({ orgId: setup.tenant.org.id, status: 'queued', eventType: 'order.created' });
      expect(row.agentId).toEqual(expect.any(String));
    }
  });

  it("runs on a plan made once (the prepared statement's generic plan), not on one planned at every read", async () => {
    // On a table of some size (on a tiny one any plan costs about the same, and the generic one is taken).
    await sql`insert into actions (id, org_id, webhook_id, delivery_id, status, event_type, external_id)
      select gen_random_uuid(), ${setup.tenant.org.id}, ${setup.webhook.id}, gen_random_uuid(), 'completed', 'order.created',
        'filler-' || n
      from generate_series(1, 5000) as n`.execute(app.container.db);
    const ids = await queuedActions(4);
    const plans = (connection: typeof app.container.db) =>
      sql<{ generic: number; custom: number }>`
        select coalesce(sum(generic_plans), 0)::int as generic, coalesce(sum(custom_plans), 0)::int as custom
        from pg_prepared_statements where statement like '%as "denied_tools"%'`
        .execute(connection)
        .then((result) => result.rows[0]!);
    const { before, after, read } = await app.container.db.connection().execute(async (connection) => {
      const before = await plans(connection);
      const read: string[] = [];
      // Reads of one to four actions, as a runner's claims take them.
      for (let round = 0; round < 3; round++)
        for (let count = 1; count <= ids.length; count++) {
          const rows = await actionsRepo.runContexts(connection, ids.slice(0, count), 'openai-compatible');
          read.push(...rows.map((row) => row.id));
        }
      return { before, after: await plans(connection), read };
    });
    expect(read).toHaveLength(3 * (1 + 2 + 3 + 4));
    // PostgreSQL plans a prepared statement's first five runs with their values; the later ones use the generic plan.
    expect(after.custom - before.custom).toBeLessThanOrEqual(5);
    expect(after.generic - before.generic).toBeGreaterThanOrEqual(7);
  });
});
