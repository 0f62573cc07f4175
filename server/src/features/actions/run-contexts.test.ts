import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillActions, plansOf } from '../../../test/helpers/plans.ts';
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
    await fillActions(app.container.db, setup, 5000);
    const ids = await queuedActions(4);
    const read: string[] = [];
    const plans = await plansOf(app.container.db, 'as "denied_tools"', async (connection) => {
      // Reads of one to four actions, as a runner's claims take them.
      for (let round = 0; round < 3; round++)
        for (let count = 1; count <= ids.length; count++) {
          const rows = await actionsRepo.runContexts(connection, ids.slice(0, count), 'openai-compatible');
          read.push(...rows.map((row) => row.id));
        }
    });
    expect(read).toHaveLength(3 * (1 + 2 + 3 + 4));
    // PostgreSQL plans a prepared statement's first five runs with their values; the later ones use the generic plan.
    expect(plans.custom).toBeLessThanOrEqual(5);
    expect(plans.generic).toBeGreaterThanOrEqual(7);
  });
});
