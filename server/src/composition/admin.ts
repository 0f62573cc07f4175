import type { Config } from '../config.ts';
import { configuredDatabase, openDatabase } from '../db/database.ts';
import { createOrgsService } from '../features/orgs/orgs.service.ts';
import { createUsersService } from '../features/users/users.service.ts';
import { createPasswordHasher } from '../lib/passwords.ts';

/**
 * The configured database, migrated, with what the admin commands use (organizations and users) and
 * nothing else of the service: a CLI process that runs one command loads a few modules instead of the
 * whole container's two thousand (docs/operations.md). A running server answers them from its own.
 */
export async function openForAdminCommands(config: Config) {
  const database = await openDatabase(configuredDatabase(config));
  try {
    await database.migrate();
  } catch (error) {
    await database.close();
    throw error;
  }
  const { db } = database;
  return {
    services: {
      orgs: createOrgsService({ db }),
      users: createUsersService({ db, passwords: createPasswordHasher(config.passwordHashCost) }),
    },
    close: () => database.close(),
  };
}
