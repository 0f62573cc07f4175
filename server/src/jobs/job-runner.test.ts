import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { waitForAction } from '../../test/helpers/actions.ts';
import { eventually } from '../../test/helpers/eventually.ts';
import { uniqueEmail } from '../../test/helpers/factories.ts';
import { startJobRunner, STOP_GRACE_MS } from '../../test/helpers/jobs.ts';
import { startFakeModel } from '../../test/helpers/fake-model.ts';
import { postEvent, setupWebhook } from '../../test/helpers/webhooks.ts';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';
import { transaction } from '../db/after-commit.ts';
import { createProcessBus } from '../lib/process-bus.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RUN_WORKERS: 'false' });
});
afterAll(async () => app?.close());

async function queuedFor(email: string): Promise<number> {
  const { rows } = await sql<{
    count: number;
  }>`select count(*)::int as count from pgboss.job where name = 'auth.password-reset' and data->>'email' = ${email}`.execute(
    app.container.db,
  );
  return rows[0]!.count;
}

describe('job runner', () => {
  it('enqueues inside a transaction: the job exists only if the transaction commits', async () => {
    const committed = uniqueEmail('commit');
    const rolledBack = uniqueEmail('rollback');
    await transaction(app.container.db, async (trx) => {
      await app.container.jobs.enqueue(
        'auth.password-reset',
        { email: committed, requestedAt: new Date().toISOString() },
        { trx },
      );
    });
    await transaction(app.container.db, async (trx) => {
      await app.container.jobs.enqueue(
        'auth.password-reset',
        { email: rolledBack, requestedAt: new Date().toISOString() },
        { trx },
      );
      throw new Error('roll back');
    }).catch(() => {});
    expect(await queuedFor(committed)).toBe(1);
    expect(await queuedFor(rolledBack)).toBe(0);
  });

  it('refuses a job due now in a transaction that would wake nobody when it commits; the transaction rolls back', async () => {
    const email = uniqueEmail('unwoken');
    const enqueued = app.container.db.transaction().execute(async (trx) => {
      await app.container.jobs.enqueue('auth.password-reset', { email, requestedAt: new Date().toISOString() }, { trx });
    });
    await expect(enqueued).rejects.toThrow(/wakes nobody/);
    expect(await queuedFor(email)).toBe(0);
  });

  it('validates payloads against the registry', async () => {
    await expect(app.container.jobs.enqueue('auth.password-reset', { email: 42 } as never)).rejects.toThrow();
  });

  it('runs a job that comes due later by the poll of every queue (nothing wakes its worker then)', async () => {
    const worker = await startTestApp({ JOB_POLL_SECONDS: '0.2' });
    try {
      // Enqueued not yet due: the wake-up of the enqueue fetches nothing; only the poll can find it later.
      const dueAt = new Date(worker.container.clock.now().getTime() + 1500);
      const jobId = await worker.container.jobs.enqueue(
        'email.lookup-message-id',
        { messageRowId: randomUUID() },
        { startAfter: dueAt },
      );
      const stateOf = async () =>
        (await sql<{ state: string }>`select state from pgboss.job where id = ${jobId}`.execute(worker.container.db)).rows[0]
          ?.state;
      expect(await stateOf()).toBe('created');
      await expect.poll(stateOf, { timeout: 10_000 }).toBe('completed');
    } finally {
      await worker.close();
    }
  });
});

// Two processes on one PostgreSQL (on PGlite there is one process per database).
describe.skipIf(process.env.TEST_DB !== 'postgres')('wake-ups across processes', () => {
  it('an action committed by a process without workers starts at once in another process, not at its next poll', async () => {
    const model = await startFakeModel();
    model.script(() => ({ text: 'Done.' }));
    const serve = await startTestApp({ ...model.env }, { workers: false });
    // The worker's fallback poll is ten minutes: only the wake-up can start the run within the wait below.
    const worker = await startTestApp({ ...model.env, JOB_POLL_SECONDS: '600' }, { shareDatabaseWith: serve });
    try {
      const setup = await setupWebhook(serve);
      const posted = await postEvent(serve, setup, { eventType: 'order.created', externalId: 'woken', data: {} });
      expect(posted.status).toBe(200);
      const { actionId } = await posted.json();
      const row = await waitForAction(serve, { token: setup.tenant.token, org: setup.tenant.org.slug }, actionId, [
        'completed',
        'failed',
      ]);
      expect(row.status).toBe('completed');
    } finally {
      await worker.close();
      await serve.close();
      await model.close();
    }
  });

  it('a job handed back by a stopping process runs at once in another process, not at its next poll', async () => {
    const queue = 'email.lookup-message-id';
    const messageRowId = randomUUID();
    // A database whose app runs no workers: only the two runners below take its jobs.
    const own = await startTestApp({}, { workers: false });
    onTestFinished(() => own.close());
    // Each runner as a process of its own: its bus on its own connection, its fallback poll ten minutes.
    const crossProcessRunner = async () => {
      const bus = createProcessBus({ postgresUrl: own.container.database.url, logger: pino({ level: 'silent' }) });
      onTestFinished(() => bus.close());
      await bus.listenForWork();
      const runner = await startJobRunner(own, undefined, undefined, { bus, pollMs: 600_000 });
      onTestFinished(() => runner.stop(STOP_GRACE_MS));
      return runner;
    };
    const [stopping, other] = [await crossProcessRunner(), await crossProcessRunner()];
    const { promise: held, resolve: release } = Promise.withResolvers<void>();
    onTestFinished(() => release());
    const ranIn: Array<{ runner: string; retryCount: number }> = [];
    const handlerOf =
      (runner: string) =>
      async (payload: { messageRowId: string }, { retryCount }: { retryCount: number }) => {
        if (payload.messageRowId !== messageRowId) return;
        ranIn.push({ runner, retryCount });
        if (runner === 'stopping') await held;
      };
    await stopping.work({ [queue]: handlerOf('stopping') });
    await stopping.enqueue(queue, { messageRowId });
    await eventually('the job running in the process that stops', () => (ranIn.length === 1 ? true : undefined));
    // Working from now on, the other process found nothing at its start, and polls again in ten minutes.
    await other.work({ [queue]: handlerOf('other') });
    await stopping.stop(200);
    await eventually('the job run in the other process', () => (ranIn.length === 2 ? true : undefined), 20_000);
    expect(ranIn).toEqual([
      { runner: 'stopping', retryCount: 0 },
      { runner: 'other', retryCount: 1 },
    ]);
  });
});
