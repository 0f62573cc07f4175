import { sql, type Kysely } from 'kysely';
import type { DB, ModelProvider } from '../../db/schema.ts';

/** What is shown of a credential: never the key, only its hint. */
const listed = ['provider', 'apiKeyHint', 'createdAt', 'updatedAt'] as const;

export const modelCredentialsRepo = {
  list: (db: Kysely<DB>, orgId: string) =>
    db.selectFrom('orgModelCredentials').select(listed).where('orgId', '=', orgId).orderBy('provider').execute(),

  upsert: (db: Kysely<DB>, orgId: string, provider: ModelProvider, values: { apiKeyEncrypted: string; apiKeyHint: string }) =>
    db
      .insertInto('orgModelCredentials')
      .values({ orgId, provider, ...values })
      .onConflict((oc) => oc.columns(['orgId', 'provider']).doUpdateSet({ ...values, updatedAt: sql<Date>`now()` }))
      .returning(listed)
      .executeTakeFirstOrThrow(),

  /** Whether there was one to delete. */
  remove: async (db: Kysely<DB>, orgId: string, provider: ModelProvider): Promise<boolean> =>
    (await db.deleteFrom('orgModelCredentials').where('orgId', '=', orgId).where('provider', '=', provider).executeTakeFirst())
      .numDeletedRows > 0n,
};
