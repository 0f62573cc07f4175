import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../lib/logger.ts';
import { waitForAction } from '../../../test/helpers/actions.ts';
import { auth, runEvent } from '../../../test/helpers/callbacks.ts';
import { startFakeModel, toolResults } from '../../../test/helpers/fake-model.ts';
import { captureLog } from '../../../test/helpers/log-capture.ts';
import type { FakeModel } from '../../../test/helpers/model-app.ts';
import { POLL_FOR_DUE_WORK, startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';

/**
 * A run's write that breaks a unique key ((thread, seq), (action, tool call id)) was read as another
 * runner's having continued the action, and the run stopped in silence. When the conflict was the
 * run's own, the action stayed running, was taken over once its lease lapsed, stopped again, and
 * failed only after MAX_TAKEOVERS leases as if its workers had died. Each claim now gives the action a
 * token that its runner keeps: with another claim's token on the action, the run stops; with its own,
 * it resumes once from what is stored (the row may be a stalled runner's), and a second conflict fails it.
 */
let app: TestApp;
let model: FakeModel;
const log = captureLog(loggerOptions('warn'));
beforeAll(async () => {
  model = await startFakeModel();
  // A lease of a second: a stopped run's action is taken over within the test.
  app = await startTestApp({ ...model.env, ...POLL_FOR_DUE_WORK, ACTION_LEASE_SECONDS: '1' }, { logger: log.logger });
});
afterAll(async () => {
  await app?.close();
  await model?.close();
});

/**
 * The model asks for a document, then, once it has the result, answers; before it answers, `meanwhile`
 * runs with the action's thread and the seq that the answer will take.
 */
function documentThenAnswer(setup: WebhookSetup, meanwhile: (threadId: string, seq: number) => Promise<void>) {
  model.script(async (request) => {
    if (toolResults(request).length === 0)
      return { toolCalls: [{ name: 'generateDocument', arguments: { title: 'Quote', content: 'body' } }] };
    const { db } = app.container;
    const { threadId } = await db
      .selectFrom('actions')
      .select('threadId')
      .where('orgId', '=', setup.tenant.org.id)
      .executeTakeFirstOrThrow();
    const { count } = await db
      .selectFrom('threadMessages')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('threadId', '=', threadId!)
      .executeTakeFirstOrThrow();
    await meanwhile(threadId!, Number(count));
    return { text: 'done' };
  });
}

async function intruder(threadId: string, seq: number): Promise<void> {
  await app.container.db
    .insertInto('threadMessages')
    .values({ id: randomUUID(), threadId, seq, role: 'user', content: JSON.stringify('written by no runner of it') })
    .execute();
}

const takeoversOf = async (actionId: string) =>
  (await app.container.db.selectFrom('actions').select('takeovers').where('id', '=', actionId).executeTakeFirstOrThrow())
    .takeovers;

describe('a run whose write conflicts', () => {
  it('resumes once from what is stored when its claim still holds the action, and completes after it', async () => {
    const setup = await setupWebhook(app);
    let answers = 0;
    // A row of the conversation that a runner which stalled past its lease may have written.
    documentThenAnswer(setup, async (threadId, seq) => {
      if (answers++ === 0) await intruder(threadId, seq);
    });
    const actionId = await runEvent(app, setup);
    const row = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(answers).toBe(2);
    expect(await takeoversOf(actionId)).toBe(0);
    const contents = await app.container.db
      .selectFrom('threadMessages as m')
      .innerJoin('actions as a', 'a.threadId', 'm.threadId')
      .select('m.content')
      .where('a.id', '=', actionId)
      .execute();
    expect(contents.map((message) => message.content)).toContain('written by no runner of it');
  });

  it('fails its action with the conflict when it conflicts again after resuming (its own fault)', async () => {
    const setup = await setupWebhook(app);
    let answers = 0;
    documentThenAnswer(setup, async (threadId, seq) => {
      answers++;
      await intruder(threadId, seq);
    });
    const actionId = await runEvent(app, setup);
    const row = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(row.status).toBe('failed');
    expect(answers).toBe(2);
    expect(row.execution.error).toMatch(
      /^Internal error while running the action: duplicate key value violates unique constraint/,
    );
    expect(await takeoversOf(actionId)).toBe(0);
    expect(log.text()).toContain('action run failed unexpectedly');
    expect(log.text()).not.toContain('another runner continued this action');
  });

  it('stops, failing nothing, when another claim took the action since; the one that holds it finishes it', async () => {
    const setup = await setupWebhook(app);
    let answered = 0;
    documentThenAnswer(setup, async (threadId, seq) => {
      // The first answer: another runner claimed the action meanwhile (a new token) and stored the step.
      if (answered++ > 0) return;
      await sql`update actions set run_token = gen_random_uuid() where thread_id = ${threadId}`.execute(app.container.db);
      await intruder(threadId, seq);
    });
    const actionId = await runEvent(app, setup);
    // The stopped run's lease lapses, and a claim (this process's, here in the other runner's place) resumes it.
    const row = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
    expect(row.status).toBe('completed');
    expect(await takeoversOf(actionId)).toBe(1);
    expect(log.text()).toContain('another runner continued this action; stopping');
    const events = await app.container.db.selectFrom('actionEvents').select('status').where('actionId', '=', actionId).execute();
    expect(events.map((event) => event.status)).not.toContain('failed');
  });
});

describe('a run whose action another claim took', () => {
  it('stops at its next renewal, its model call aborted, without waiting for an answer or a write', async () => {
    const setup = await setupWebhook(app);
    const answer = Promise.withResolvers<void>();
    let asked = 0;
    documentThenAnswer(setup, async (threadId) => {
      if (asked++ > 0) return;
      // Another runner claimed the action meanwhile; this model call answers only once the test ends.
      await sql`update actions set run_token = gen_random_uuid() where thread_id = ${threadId}`.execute(app.container.db);
      await answer.promise;
    });
    try {
      const actionId = await runEvent(app, setup);
      const row = await waitForAction(app, auth(setup), actionId, ['completed', 'failed']);
      expect(row.status).toBe('completed');
      // The first run stopped while its model call was still unanswered (its lease then lapsed, and a claim resumed it).
      const stopped = log.lines.filter(
        (line) => line.includes(actionId) && line.includes('another runner continued this action'),
      );
      expect(stopped).toHaveLength(1);
      expect(await takeoversOf(actionId)).toBe(1);
    } finally {
      answer.resolve();
    }
  });
});
