import { PgBoss } from 'pg-boss';
import type { Database } from '../../src/db/database.ts';
import { createTestDatabase } from './test-database.ts';

/** pg-boss, started on a fresh test database, without its maintenance and schedules. */
export async function startTestBoss(): Promise<{ database: Database; boss: PgBoss; close: () => Promise<void> }> {
  const database = await createTestDatabase();
  const boss = new PgBoss({ ...database.jobsOptions, supervise: false, schedule: false });
  boss.on('error', () => {});
  await boss.start();
  return {
    database,
    boss,
    async close() {
      await boss.stop({ graceful: false, close: true });
      await database.close();
    },
  };
}
