import type { Kysely } from 'kysely';
import type { DB, ModelProvider } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { notFound } from '../../lib/errors.ts';
import { modelCredentialsRepo } from './model-credentials.repo.ts';

/** An org's own API key per model provider, encrypted at rest; only its last four characters are ever shown. */
export function createModelCredentialsService(deps: { db: Kysely<DB>; box: SecretBox }) {
  return {
    list: (orgId: string) => modelCredentialsRepo.list(deps.db, orgId),

    set: (orgId: string, provider: ModelProvider, apiKey: string) =>
      modelCredentialsRepo.upsert(deps.db, orgId, provider, {
        apiKeyEncrypted: deps.box.encrypt(apiKey),
        apiKeyHint: `...${apiKey.slice(-4)}`,
      }),

    async remove(orgId: string, provider: ModelProvider) {
      if (!(await modelCredentialsRepo.remove(deps.db, orgId, provider))) throw notFound('Model credential');
    },
  };
}

export type ModelCredentialsService = ReturnType<typeof createModelCredentialsService>;
