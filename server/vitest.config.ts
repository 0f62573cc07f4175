import pg from 'pg';
import { configDefaults, defineConfig } from 'vitest/config';

const PROCESS_TESTS = [
  'src/features/ingest/durability.test.ts',
  'src/features/callbacks/restart.test.ts',
  'src/features/actions/resume.test.ts',
  'src/features/email/restart.test.ts',
  'src/features/approvals/slack/slack-restart.test.ts',
  'src/features/experiments/experiments-restart.test.ts',
  'src/features/mcp/mcp-crash.test.ts',
  'test/process-lifecycle.test.ts',
];
/** The console in a real browser: against the embedded database, as `npm start` serves it. */
const CONSOLE_TESTS = ['test/console/**/*.test.ts'];

/**
 * The whole suite runs twice: on embedded PGlite and on PostgreSQL (TEST_DATABASE_URL). Without a
 * reachable PostgreSQL the second pass is skipped, loudly; REQUIRE_POSTGRES=1 (set by CI) makes
 * that a failure instead.
 */
process.env.TEST_DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';
const postgresUrl = process.env.TEST_DATABASE_URL;

async function postgresReachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

export default defineConfig(async () => {
  const problem = await postgresReachable(postgresUrl);
  const redacted = postgresUrl.replace(/\/\/[^@/]*@/, '//***@');
  if (problem) {
    if (process.env.REQUIRE_POSTGRES === '1') {
      throw new Error(`REQUIRE_POSTGRES=1 but PostgreSQL at ${redacted} is not reachable: ${problem}`);
    }
    process.env.POSTGRES_PASS_SKIPPED = `PostgreSQL at ${redacted} is not reachable (${problem})`;
  }
  const project = (name: 'pglite' | 'postgres') => ({
    extends: true as const,
    test: {
      name,
      env: { TEST_DB: name, TEST_DATABASE_URL: postgresUrl },
      // Tests that kill and restart server processes prove durability, which is the database's:
      // they run once, on PostgreSQL (when it is reachable). The CLI test runs on both: the embedded
      // database's one-process rule and admin socket are what it checks there.
      exclude: [
        ...configDefaults.exclude,
        ...(name === 'pglite' && !problem ? PROCESS_TESTS : []),
        ...(name === 'postgres' ? CONSOLE_TESTS : []),
      ],
    },
  });
  return {
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts', '../sdk/test/**/*.test.ts'],
      setupFiles: ['test/setup.ts'],
      globalSetup: ['test/global-setup.ts'],
      reporters: ['default', './test/summary-reporter.ts'],
      // Test files mostly wait (on sockets, fake providers, child processes): on 2 cores, vitest's
      // default of one worker per core less one left the machine idle for most of the run.
      maxWorkers: Number(process.env.TEST_WORKERS ?? 4),
      // A worker runs its files in one module graph: loading the app's modules again for each
      // file was a fifth of the run. Test files share no state but the database they each create.
      isolate: false,
      restoreMocks: true,
      testTimeout: 30_000,
      hookTimeout: 60_000,
      projects: problem ? [project('pglite')] : [project('pglite'), project('postgres')],
    },
  };
});
