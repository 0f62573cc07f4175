import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBoss } from '../../test/helpers/test-boss.ts';
import type { Database } from '../db/database.ts';
import { captureEmbeddedInsert } from './embedded-insert.ts';

let database: Database;
let boss: PgBoss;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ database, boss, close } = await startTestBoss());
});
afterAll(() => close?.());

const jobColumns = async (name: string) =>
  (
    await sql<
      Record<string, unknown>
    >`select data, state, priority, retry_limit, retry_delay, retry_backoff, expire_seconds, deletion_seconds, policy, singleton_key
    from pgboss.job where name = ${name} order by data->>'n'`.execute(database.db)
  ).rows;

describe('pg-boss insert embedded in a statement of ours', () => {
  it('writes the jobs pg-boss itself writes, one per row of the data query, in that statement', async () => {
    const options = { retryLimit: 3, retryDelay: 5, retryBackoff: true, expireInSeconds: 3600 };
    await boss.createQueue('embedded-ours', options);
    await boss.createQueue('embedded-theirs', options);
    const insertJobs = await captureEmbeddedInsert(boss, 'embedded-ours', options);
    expect(insertJobs).toBeDefined();

    await sql`with picked as (select n from generate_series(1, 3) n), jobs as (${insertJobs!(sql`select jsonb_build_object('n', n) as data from picked`)}) select 1`.execute(
      database.db,
    );
    await boss.insert(
      'embedded-theirs',
      [1, 2, 3].map((n) => ({ data: { n }, ...options })),
    );

    const ours = await jobColumns('embedded-ours');
    expect(ours).toHaveLength(3);
    expect(ours).toEqual(await jobColumns('embedded-theirs'));
    expect(ours[0]).toMatchObject({
      data: { n: 1 },
      state: 'created',
      retryLimit: 3,
      retryDelay: 5,
      retryBackoff: true,
      expireSeconds: 3600,
    });
  });

  it('writes nothing when the data query has no rows, and nothing when the statement fails', async () => {
    await boss.createQueue('embedded-none');
    const insertJobs = (await captureEmbeddedInsert(boss, 'embedded-none', {}))!;
    await sql`with jobs as (${insertJobs(sql`select '{}'::jsonb as data where false`)}) select 1`.execute(database.db);
    await expect(sql`with jobs as (${insertJobs(sql`select '{}'::jsonb as data`)}) select 1 / 0`.execute(database.db)).rejects.toThrow(
      /division by zero/,
    );
    expect(await jobColumns('embedded-none')).toEqual([]);
  });
});
