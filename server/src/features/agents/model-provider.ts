import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import type { Kysely } from 'kysely';
import type { DB, ModelProvider } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';

export interface ModelDefaults {
  provider: ModelProvider;
  baseUrl?: string;
  apiKey?: string;
  name?: string;
}

/** Why an agent has no usable model; the action fails with this message. */
export class ModelUnavailableError extends Error {
  override name = 'ModelUnavailableError';
}

/**
 * The language model of an agent: its provider and model name, or the server's (MODEL_PROVIDER,
 * MODEL_NAME); the org's own key for that provider, or the server's MODEL_API_KEY. The base URL is
 * the operator's (MODEL_BASE_URL), never an org's, so no tenant can point the server at an address.
 */
export function createModelResolver(deps: { db: Kysely<DB>; box: SecretBox; defaults: ModelDefaults }) {
  return async function resolveModel(orgId: string, agent: { provider: ModelProvider | null; model: string | null }): Promise<LanguageModel> {
    const provider = agent.provider ?? deps.defaults.provider;
    const modelName = agent.model ?? deps.defaults.name;
    if (!modelName) throw new ModelUnavailableError("The agent has no model: set the agent's model, or MODEL_NAME on the server");
    const stored = await deps.db.selectFrom('orgModelCredentials').select('apiKeyEncrypted').where('orgId', '=', orgId).where('provider', '=', provider).executeTakeFirst();
    const serverDefault = provider === deps.defaults.provider;
    const apiKey = stored ? deps.box.decrypt(stored.apiKeyEncrypted) : serverDefault ? deps.defaults.apiKey : undefined;
    const baseURL = serverDefault ? deps.defaults.baseUrl : undefined;

    switch (provider) {
      case 'openai-compatible':
        if (!baseURL) throw new ModelUnavailableError('The openai-compatible provider needs a base URL: set MODEL_BASE_URL on the server');
        return createOpenAICompatible({ name: 'openai-compatible', baseURL, apiKey }).chatModel(modelName);
      case 'openai':
        if (!apiKey) throw new ModelUnavailableError('No API key for the openai provider: store one for the organization, or set MODEL_API_KEY');
        return createOpenAI({ apiKey, baseURL })(modelName);
      case 'anthropic':
        if (!apiKey) throw new ModelUnavailableError('No API key for the anthropic provider: store one for the organization, or set MODEL_API_KEY');
        return createAnthropic({ apiKey, baseURL })(modelName);
    }
  };
}

export type ModelResolver = ReturnType<typeof createModelResolver>;
