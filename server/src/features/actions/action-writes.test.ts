import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCallback } from '../../../test/helpers/callbacks.ts';
import { expectCommitWithoutFlush } from '../../../test/helpers/flushless.ts';
import { fillActions, plansOf } from '../../../test/helpers/plans.ts';
import { startTestApp, type TestApp } from '../../../test/helpers/test-app.ts';
import { postEvent, setupWebhook, type WebhookSetup } from '../../../test/helpers/webhooks.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { createGroupCommit } from '../../lib/group-commit.ts';
import { isRunClaimLost, messageRow, writeActions, type ActionWrite, type ActionWriteResult } from './action-writes.ts';
import { claimRunnable } from './lifecycle.ts';

/**
 * The steps of concurrent runs are stored together, in one statement (writeActions) per group
 * commit. Each action's rows must come out as if written alone, and one bad write must fail only
 * its own run.
 */
let app: TestApp;
let setup: WebhookSetup;
beforeAll(async () => {
  // No worker: the test claims the actions itself and writes their steps (no callback is sent).
  app = await startTestApp({ CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' }, { workers: false });
  setup = await setupWebhook(app);
  await addCallback(app, setup, { url: 'http://127.0.0.1:9/never-called', events: ['action.completed'] });
});
afterAll(async () => {
  await app?.close();
});

/** Actions of the setup's webhook, claimed (running) as a worker would. */
async function runningActions(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await postEvent(app, setup, { eventType: 'order.created', externalId: randomUUID() });
    ids.push((await response.json()).actionId);
  }
  const claimed = await claimRunnable(app.container.db, 100, 60_000);
  expect(claimed.map((claim) => claim.id)).toEqual(expect.arrayContaining(ids));
  return ids;
}

const opening = (actionId: string) => {
  const threadId = randomUUID();
  return {
    threadId,
    thread: { id: threadId, orgId: setup.tenant.org.id, userId: setup.tenant.admin.id, title: 'order.created', actionId },
    first: messageRow(threadId, 0, { role: 'user', content: 'the event' }, actionId),
  };
};

/** A call a model step proposed that may run at once; `startedAt`: one that may not be repeated, started with its step. */
const readyCall = (actionId: string, id: string, startedAt: Date | null = null) => ({
  id,
  orgId: setup.tenant.org.id,
  actionId,
  toolCallId: 'call-1',
  toolName: 'generateDocument',
  position: 0,
  input: JSON.stringify({ title: 'x' }),
  mode: 'allow' as const,
  status: 'ready' as const,
  approval: 'not_required' as const,
  output: null,
  requestedAt: app.container.clock.now(),
  expiresAt: null,
  completedAt: null,
  startedAt,
});

const completed = (actionId: string, text: string): ActionWrite['transition'] => ({
  actionId,
  from: 'running',
  to: 'completed',
  cause: 'the agent finished',
  changes: { result: JSON.stringify({ text }), error: null, leaseExpiresAt: null },
});

describe('claimRunnable', () => {
  it('takes queued actions, committing without waiting for the flush, in its own transaction only', async () => {
    const response = await postEvent(app, setup, { eventType: 'order.created', externalId: randomUUID() });
    const { actionId } = await response.json();
    const claimed = await expectCommitWithoutFlush(app.container.db, (trx) => claimRunnable(trx, 100, 60_000));
    expect(claimed.map((claim) => claim.id)).toContain(actionId);
    const { status } = await app.container.db
      .selectFrom('actions')
      .select('status')
      .where('id', '=', actionId)
      .executeTakeFirstOrThrow();
    expect(status).toBe('running');
  });
});

describe('writeActions', () => {
  it("stores several actions' steps in one statement, each as if alone", async () => {
    const [stepping, finishing, done] = await runningActions(3);
    const a = opening(stepping!);
    const b = opening(finishing!);
    const callRowId = randomUUID();
    const results = await writeActions(app.container.db, [
      {
        actionId: stepping!,
        thread: a.thread,
        messages: [a.first, messageRow(a.threadId, 1, { role: 'assistant', content: [{ type: 'tool-call' }] }, stepping!)],
        toolCalls: [readyCall(stepping!, callRowId)],
      },
      // Opened and finished at once: the transition links the thread.
      { actionId: finishing!, thread: b.thread, messages: [b.first], transition: completed(finishing!, 'at once') },
      { actionId: done!, transition: completed(done!, 'later') },
    ]);
    expect(results).toEqual<ActionWriteResult[]>([
      { moved: false, callbacks: 0, linked: true },
      { moved: true, callbacks: 1, linked: true },
      { moved: true, callbacks: 1, linked: false },
    ]);

    const db = app.container.db;
    const actions = await db
      .selectFrom('actions')
      .select(['id', 'status', 'threadId', 'result'])
      .where('id', 'in', [stepping!, finishing!, done!])
      .execute();
    const byId = new Map(actions.map((row) => [row.id, row]));
    expect(byId.get(stepping!)).toMatchObject({ status: 'running', threadId: a.threadId });
    expect(byId.get(finishing!)).toMatchObject({ status: 'completed', threadId: b.threadId, result: { text: 'at once' } });
    expect(byId.get(done!)).toMatchObject({ status: 'completed', threadId: null, result: { text: 'later' } });
    expect(
      await db.selectFrom('threadMessages').select(['seq', 'role']).where('threadId', '=', a.threadId).orderBy('seq').execute(),
    ).toEqual([
      { seq: 0, role: 'user' },
      { seq: 1, role: 'assistant' },
    ]);
    const events = await db
      .selectFrom('actionEvents')
      .select(['actionId', 'status'])
      .where('status', '=', 'completed')
      .where('actionId', 'in', [stepping!, finishing!, done!])
      .execute();
    expect(events.map((event) => event.actionId).sort()).toEqual([finishing!, done!].sort());
    const callbacks = await db
      .selectFrom('callbackDeliveries')
      .select(['actionId', 'payload'])
      .where('actionId', 'in', [finishing!, done!])
      .execute();
    expect(callbacks).toHaveLength(2);
    const payload = callbacks.find((row) => row.actionId === finishing)!.payload as {
      type: string;
      data: Record<string, unknown>;
    };
    expect(payload.type).toBe('action.completed');
    expect(payload.data).toMatchObject({
      actionId: finishing,
      status: 'completed',
      result: { text: 'at once' },
      eventType: 'order.created',
    });

    // The call's result, and a transition from a status the action is not in (it moves nothing).
    const [finished] = await writeActions(db, [
      {
        actionId: stepping!,
        finishedCall: { id: callRowId, status: 'completed', output: { ok: true }, completedAt: app.container.clock.now() },
        transition: { ...completed(stepping!, 'x')!, from: 'approved', to: 'running', cause: 'no' },
      },
    ]);
    expect(finished).toEqual({ moved: false, callbacks: 0, linked: false });
    expect(await db.selectFrom('toolCalls').select(['status', 'output']).where('id', '=', callRowId).executeTakeFirst()).toEqual({
      status: 'completed',
      output: { ok: true },
    });
    expect((await db.selectFrom('actions').select('status').where('id', '=', stepping!).executeTakeFirst())?.status).toBe(
      'running',
    );
  });

  it('a thread a second runner opens for an action that has one is not linked', async () => {
    const [actionId] = await runningActions(1);
    const first = opening(actionId!);
    const second = opening(actionId!);
    expect(
      (await writeActions(app.container.db, [{ actionId: actionId!, thread: first.thread, messages: [first.first] }]))[0]!.linked,
    ).toBe(true);
    expect(
      (await writeActions(app.container.db, [{ actionId: actionId!, thread: second.thread, messages: [second.first] }]))[0]!
        .linked,
    ).toBe(false);
  });

  it('group-committed: a write that conflicts fails alone, the others of its batch are stored', async () => {
    const [good, bad] = await runningActions(2);
    const a = opening(good!);
    const b = opening(bad!);
    await writeActions(app.container.db, [{ actionId: bad!, thread: b.thread, messages: [b.first] }]);
    const commits = createGroupCommit<ActionWrite, ActionWriteResult>({
      maxInFlight: 1,
      maxBatch: 10,
      writeBatch: (writes) => writeActions(app.container.db, writes),
      writeAlone: async (write) => (await writeActions(app.container.db, [write]))[0]!,
    });
    const [stored, conflicting] = await Promise.allSettled([
      commits.write({ actionId: good!, thread: a.thread, messages: [a.first] }),
      // seq 0 of b's thread is taken: another runner wrote this step.
      commits.write({ actionId: bad!, messages: [messageRow(b.threadId, 0, { role: 'assistant', content: [] }, bad!)] }),
    ]);
    expect(stored).toEqual({ status: 'fulfilled', value: { moved: false, callbacks: 0, linked: true } });
    expect(conflicting.status).toBe('rejected');
    expect(isUniqueViolation((conflicting as PromiseRejectedResult).reason)).toBe(true);
    const row = await app.container.db.selectFrom('actions').select('threadId').where('id', '=', good!).executeTakeFirst();
    expect(row?.threadId).toBe(a.threadId);
  });

  it('group-committed: two writes for one action (a row is updated once per statement) are both stored, one after the other', async () => {
    const [actionId] = await runningActions(1);
    const { thread, first } = opening(actionId!);
    const commits = createGroupCommit<ActionWrite, ActionWriteResult>({
      maxInFlight: 1,
      maxBatch: 10,
      writeBatch: (writes) => writeActions(app.container.db, writes),
      writeAlone: async (write) => (await writeActions(app.container.db, [write]))[0]!,
    });
    const results = await Promise.all([
      commits.write({ actionId: actionId!, thread, messages: [first] }),
      commits.write({ actionId: actionId!, transition: completed(actionId!, 'twice') }),
    ]);
    expect(results).toEqual([
      { moved: false, callbacks: 0, linked: true },
      { moved: true, callbacks: 1, linked: false },
    ]);
    const row = await app.container.db
      .selectFrom('actions')
      .select(['status', 'threadId'])
      .where('id', '=', actionId!)
      .executeTakeFirst();
    expect(row).toEqual({ status: 'completed', threadId: thread.id });
  });

  it("refuses a run's write whole once another claim took its action; the batch's other writes are stored", async () => {
    const db = app.container.db;
    const [held, taken] = await runningActions(2);
    const tokens = new Map(
      (await db.selectFrom('actions').select(['id', 'runToken']).where('id', 'in', [held!, taken!]).execute()).map((row) => [
        row.id,
        row.runToken!,
      ]),
    );
    // Another claim took `taken` since: its runner stalled past its lease and still holds the old token.
    await sql`update actions set run_token = gen_random_uuid() where id = ${taken!}`.execute(db);
    const a = opening(held!);
    const b = opening(taken!);
    const commits = createGroupCommit<ActionWrite, ActionWriteResult>({
      maxInFlight: 1,
      maxBatch: 10,
      writeBatch: (writes) => writeActions(db, writes),
      writeAlone: async (write) => (await writeActions(db, [write]))[0]!,
    });
    const stepOf = (actionId: string, opened: ReturnType<typeof opening>, callId: string): ActionWrite => ({
      actionId,
      runToken: tokens.get(actionId)!,
      thread: opened.thread,
      messages: [opened.first],
      // A call that may not be repeated, started with its step: its request leaves once this write commits.
      toolCalls: [readyCall(actionId, callId, app.container.clock.now())],
    });
    const [stored, refused] = await Promise.allSettled([
      commits.write(stepOf(held!, a, randomUUID())),
      commits.write(stepOf(taken!, b, randomUUID())),
    ]);
    expect(stored).toEqual({ status: 'fulfilled', value: { moved: false, callbacks: 0, linked: true } });
    expect(refused.status).toBe('rejected');
    expect(isRunClaimLost((refused as PromiseRejectedResult).reason)).toBe(true);
    expect((refused as PromiseRejectedResult).reason.message).toBe(`another runner claimed action ${taken} since this run did`);
    // Nothing of the refused write: no thread, no message, no call.
    expect(await db.selectFrom('threads').select('id').where('id', 'in', [a.threadId, b.threadId]).execute()).toEqual([
      { id: a.threadId },
    ]);
    expect(await db.selectFrom('threadMessages').select('id').where('threadId', '=', b.threadId).execute()).toEqual([]);
    expect(await db.selectFrom('toolCalls').select('id').where('actionId', '=', taken!).execute()).toEqual([]);
    // A failure written without the run's step (a run that failed to begin, a sixth takeover) carries
    // the claim's token alone, and is refused the same: the action stays with the claim that holds it.
    const failure: ActionWrite = {
      actionId: taken!,
      runToken: tokens.get(taken!)!,
      transition: {
        actionId: taken!,
        from: 'running',
        to: 'failed',
        cause: 'The run-as user of the action no longer exists',
        changes: { result: null, error: 'The run-as user of the action no longer exists', leaseExpiresAt: null },
      },
    };
    const lateFailure = await writeActions(db, [failure]).catch((error: unknown) => error);
    expect(isRunClaimLost(lateFailure)).toBe(true);
    expect(await db.selectFrom('actions').select(['status', 'error']).where('id', '=', taken!).executeTakeFirst()).toEqual({
      status: 'running',
      error: null,
    });
    // A write without a token (a person's decision, the lifecycle's own moves) is not fenced.
    const [moved] = await writeActions(db, [{ actionId: taken!, transition: completed(taken!, 'by a person') }]);
    expect(moved!.moved).toBe(true);
  });

  it('refuses a transition the lifecycle does not have, writing nothing', async () => {
    const [actionId] = await runningActions(1);
    await expect(
      writeActions(app.container.db, [{ actionId: actionId!, transition: { ...completed(actionId!, 'x')!, to: 'queued' } }]),
    ).rejects.toThrow(/cannot go from running to queued/);
  });

  it("runs a small batch on a plan made once (the prepared statement's generic plan), not on one planned per call", async () => {
    await fillActions(app.container.db, setup, 5000);
    const ids = await runningActions(8);
    const plans = await plansOf(app.container.db, 'moved as (', async (connection) => {
      for (const id of ids) await writeActions(connection, [{ actionId: id, transition: completed(id, 'done') }]);
    });
    // PostgreSQL plans a prepared statement's first five runs with their values; the later ones use the generic plan.
    expect(plans.custom).toBeLessThanOrEqual(5);
    expect(plans.generic).toBeGreaterThanOrEqual(3);
  });
});
