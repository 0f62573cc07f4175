import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModel } from 'ai';
import type { ModelProvider } from '../../db/schema.ts';
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
 * MODEL_NAME); the org's own key for that provider (read with the run's context), or the server's
 * MODEL_API_KEY. The base URL is the operator's (MODEL_BASE_URL), never an org's, so no tenant can
 * point the server at an address. Providers and their models are made once per key and reused (a
 * model instance builds its response schemas when made: too costly for every step).
 */
export function createModelResolver(deps: { box: SecretBox; defaults: ModelDefaults }) {
  const providers = new Map<string, (modelName: string) => LanguageModel>();
  const models = new Map<string, LanguageModel>();

  function providerFor(provider: ModelProvider, apiKey: string | undefined, baseURL: string | undefined) {
    const key = JSON.stringify([provider, apiKey, baseURL]);
    let make = providers.get(key);
    if (!make) {
      if (provider === 'openai-compatible') {
        const compatible = createOpenAICompatible({ name: 'openai-compatible', baseURL: baseURL!, apiKey });
        make = (modelName) => compatible.chatModel(modelName);
      } else if (provider === 'openai') {
        const openai = createOpenAI({ apiKey, baseURL });
        make = (modelName) => openai(modelName);
      } else {
        const anthropic = createAnthropic({ apiKey, baseURL });
        make = (modelName) => anthropic(modelName);
      }
      if (providers.size > 1000) providers.clear();
      providers.set(key, make);
    }
    return make;
  }

  return function resolveModel(agent: { provider: ModelProvider | null; model: string | null; orgApiKeyEncrypted: string | null }): LanguageModel {
    const provider = agent.provider ?? deps.defaults.provider;
    const modelName = agent.model ?? deps.defaults.name;
    if (!modelName) throw new ModelUnavailableError("The agent has no model: set the agent's model, or MODEL_NAME on the server");
    const serverDefault = provider === deps.defaults.provider;
    const apiKey = agent.orgApiKeyEncrypted ? deps.box.decrypt(agent.orgApiKeyEncrypted) : serverDefault ? deps.defaults.apiKey : undefined;
    const baseURL = serverDefault ? deps.defaults.baseUrl : undefined;
    if (provider === 'openai-compatible' && !baseURL) throw new ModelUnavailableError('The openai-compatible provider needs a base URL: set MODEL_BASE_URL on the server');
    if (provider !== 'openai-compatible' && !apiKey) throw new ModelUnavailableError(`No API key for the ${provider} provider: store one for the organization, or set MODEL_API_KEY`);
    const key = JSON.stringify([provider, apiKey, baseURL, modelName]);
    let model = models.get(key);
    if (!model) {
      model = providerFor(provider, apiKey, baseURL)(modelName);
      if (models.size > 1000) models.clear();
      models.set(key, model);
    }
    return model;
  };
}

export type ModelResolver = ReturnType<typeof createModelResolver>;
