import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from '../../test/helpers/factories.ts';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';

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
    await app.container.db.transaction().execute(async (trx) => {
      await app.container.jobs.enqueue('auth.password-reset', { email: committed, requestedAt: new Date().toISOString() }, { trx });
    });
    await app.container.db
      .transaction()
      .execute(async (trx) => {
        await app.container.jobs.enqueue('auth.password-reset', { email: rolledBack, requestedAt: new Date().toISOString() }, { trx });
        throw new Error('roll back');
      })
      .catch(() => {});
    expect(await queuedFor(committed)).toBe(1);
    expect(await queuedFor(rolledBack)).toBe(0);
  });

  it('validates payloads against the registry', async () => {
    await expect(app.container.jobs.enqueue('auth.password-reset', { email: 42 } as never)).rejects.toThrow();
  });
});
