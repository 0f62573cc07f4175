import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildPgliteTemplate, buildPostgresTemplate } from './helpers/database-templates.ts';
import { buildConsole } from './helpers/browser.ts';

/**
 * Once per run: the migrated databases every test file starts from (a PGlite dump, and a PostgreSQL
 * template database when PostgreSQL is reachable), the console's build for the browser tests (once:
 * two builds at a time would empty each other's output), and a plain line, at the start and at the
 * end, when the PostgreSQL pass did not run.
 */
export default async function setup(project: TestProject) {
  const skipped = process.env.POSTGRES_PASS_SKIPPED;
  const say = () => {
    if (skipped) process.stderr.write(`\n*** PostgreSQL pass SKIPPED: ${skipped}. Tests ran on PGlite only. ***\n\n`);
  };
  say();
  const directory = await mkdtemp(join(tmpdir(), 'agent-platform-test-'));
  const pgliteTemplateFile = join(directory, 'pglite.tar');
  const [postgres] = await Promise.all([
    skipped ? undefined : buildPostgresTemplate(process.env.TEST_DATABASE_URL!),
    buildPgliteTemplate(pgliteTemplateFile),
    buildConsole(),
  ]);
  project.provide('pgliteTemplateFile', pgliteTemplateFile);
  project.provide('postgresTemplateDatabase', postgres?.name);
  return async () => {
    say();
    await postgres?.drop();
    await rm(directory, { recursive: true, force: true });
  };
}
