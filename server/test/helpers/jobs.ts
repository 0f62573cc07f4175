import { type Kysely, sql } from 'kysely';
import type { DB } from '../../src/db/schema.ts';

/** The jobs of a queue whose payload names `actionId`, oldest first: where each stands in pg-boss. */
export const jobsOfAction = async (db: Kysely<DB>, queue: string, actionId: string) =>
  (
    await sql<{ id: string; state: string; retryCount: number; retryLimit: number; later: boolean }>`
      select id, state, retry_count as "retryCount", retry_limit as "retryLimit", start_after > now() as later
        from pgboss.job where name = ${queue} and data->>'actionId' = ${actionId}
       order by created_on`.execute(db)
  ).rows;
