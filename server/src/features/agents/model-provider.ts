import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import type { ModelProvider } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { createRequestFetch } from '../../lib/request-fetch.ts';

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
 * MODEL_NAME); the org's own key for that provider (read with the run's context), or the server's
 * MODEL_API_KEY. The base URL is the operator's (MODEL_BASE_URL), never an org's, so no tenant can
 * point the server at an address. Models are made once per (provider, key, base URL, name) and reused
 * (a model instance builds its response schemas when made: too costly for every step).
 */
export function createModelResolver(deps: { box: SecretBox; defaults: ModelDefaults }) {
  const models = new Map<string, LanguageModel>();
  const fetch = createRequestFetch();

  function makeModel(
    provider: ModelProvider,
    apiKey: string | undefined,
    baseURL: string | undefined,
    modelName: string,
  ): LanguageModel {
    if (provider === 'openai-compatible')
      return createOpenAICompatible({ name: 'openai-compatible', baseURL: baseURL!, apiKey, fetch }).chatModel(modelName);
    if (provider === 'openai') return createOpenAI({ apiKey, baseURL, fetch })(modelName);
    return createAnthropic({ apiKey, baseURL, fetch })(modelName);
  }

  return function resolveModel(agent: {
    provider: ModelProvider | null;
    model: string | null;
    orgApiKeyEncrypted: string | null;
  }): LanguageModel {
    const provider = agent.provider ?? deps.defaults.provider;
    const modelName = agent.model ?? deps.defaults.name;
    if (!modelName) throw new ModelUnavailableError("The agent has no model: set the agent's model, or MODEL_NAME on the server");
    const serverDefault = provider === deps.defaults.provider;
    const apiKey = agent.orgApiKeyEncrypted
      ? deps.box.decrypt(agent.orgApiKeyEncrypted)
      : serverDefault
        ? deps.defaults.apiKey
        : undefined;
    const baseURL = serverDefault ? deps.defaults.baseUrl : undefined;
    if (provider === 'openai-compatible' && !baseURL)
      throw new ModelUnavailableError('The openai-compatible provider needs a base URL: set MODEL_BASE_URL on the server');
    if (provider !== 'openai-compatible' && !apiKey)
      throw new ModelUnavailableError(
        `No API key for the ${provider} provider: store one for the organization, or set MODEL_API_KEY`,
      );
    const key = JSON.stringify([provider, apiKey, baseURL, modelName]);
    let model = models.get(key);
    if (!model) {
      model = makeModel(provider, apiKey, baseURL, modelName);
      if (models.size > 1000) models.clear();
      models.set(key, model);
    }
    return model;
  };
}

export type ModelResolver = ReturnType<typeof createModelResolver>;
