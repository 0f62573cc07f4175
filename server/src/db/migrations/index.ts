import type { Migration, MigrationProvider } from 'kysely/migration';
import * as foundation from './0001_foundation.ts';

/** Every migration, in order. PGlite and PostgreSQL run the same list. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
