import { randomBytes } from 'node:crypto';
import diagnosticsChannel from 'node:diagnostics_channel';
import { generateText, type ModelMessage } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeModel } from '../../../test/helpers/fake-model.ts';
import { createSecretBox } from '../../lib/crypto.ts';
import { createModelResolver } from '../agents/model-provider.ts';
import { callModel, ModelCallError, modelTools, type ToolPlan } from './model-step.ts';

/** The AI SDK's own telemetry: the tracing channel it publishes each call on when anyone listens. */
const SDK_TELEMETRY_CHANNEL = 'ai:telemetry';

let model: Awaited<ReturnType<typeof startFakeModel>>;
beforeAll(async () => {
  model = await startFakeModel();
});
afterAll(async () => {
  await model?.close();
});

const languageModel = () =>
  createModelResolver({
    box: createSecretBox(randomBytes(32).toString('base64')),
    defaults: { provider: 'openai-compatible', baseUrl: model.env.MODEL_BASE_URL, apiKey: model.apiKey, name: 'scripted-model' },
  })({ provider: null, model: null, orgApiKeyEncrypted: null });

/** Counts the SDK's telemetry events published while `work` runs. */
async function sdkTelemetryEvents(work: () => Promise<unknown>): Promise<number> {
  let events = 0;
  const count = () => void events++;
  const subscribers = { start: count, end: count, asyncStart: count, asyncEnd: count, error: count };
  const channel = diagnosticsChannel.tracingChannel(SDK_TELEMETRY_CHANNEL);
  channel.subscribe(subscribers);
  try {
    await work();
  } finally {
    channel.unsubscribe(subscribers);
  }
  return events;
}

describe('callModel', () => {
  const plans = new Map<string, ToolPlan>([
    [
      'lookup',
      {
        definition: {
          name: 'lookup',
          description: 'Looks an order up',
          inputJsonSchema: { type: 'object' },
          execute: async () => ({}),
        },
        mode: 'allow',
        source: { source: 'default' },
      },
    ],
  ]);

  /** One model step as a run takes it, with the tool above; `overrides` changes what a test is about. */
  const askModel = (overrides: Partial<Parameters<typeof callModel>[0]> = {}) =>
    callModel({
      model: languageModel(),
      instructions: 'Answer the customer.',
      messages: [{ role: 'user', content: 'Where is order 42?' }],
      tools: modelTools(plans),
      timeoutMs: 10_000,
      maxRetries: 0,
      signal: new AbortController().signal,
      ...overrides,
    });

  it('proposes the calls the model asks for, with their arguments, and the usage it reports', async () => {
    model.script(() => ({
      toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { order: 42 } }],
      usage: { prompt: 12, completion: 3 },
    }));
    const step = await askModel();
    expect(step.calls).toEqual([{ toolCallId: 'call_1', toolName: 'lookup', input: { order: 42 }, invalid: false }]);
    expect(step.usage).toEqual({ inputTokens: 12, outputTokens: 3, cachedInputTokens: 0 });
  });

  it('marks a call it cannot take as invalid (arguments that are not JSON, a tool the run does not have) instead of failing', async () => {
    model.script(() => ({
      toolCalls: [
        { id: 'call_bad', name: 'lookup', arguments: '{"order": 4' },
        { id: 'call_unknown', name: 'refund', arguments: {} },
      ],
    }));
    const step = await askModel();
    expect(step.calls).toEqual([
      expect.objectContaining({ toolCallId: 'call_bad', toolName: 'lookup', invalid: true }),
      expect.objectContaining({ toolCallId: 'call_unknown', toolName: 'refund', invalid: true }),
    ]);
  });

  it("answers with text and no calls, after the SDK's retries of a failure that may pass (a 5xx)", async () => {
    let attempts = 0;
    model.script(() => (++attempts === 1 ? { error: { status: 503, message: 'busy' } } : { text: 'It ships today.' }));
    const step = await askModel({ instructions: '', maxRetries: 1 });
    expect(attempts).toBe(2);
    expect(step).toMatchObject({
      text: 'It ships today.',
      calls: [],
      assistant: { role: 'assistant', content: [{ type: 'text', text: 'It ships today.' }] },
    });
  });

  it('fails a conversation the SDK cannot read as a ModelCallError, without asking the model', async () => {
    const before = model.requests.length;
    const unreadable = [{ role: 'tool', content: 'not a list of results' }] as unknown as ModelMessage[];
    await expect(askModel({ messages: unreadable })).rejects.toThrow(ModelCallError);
    expect(model.requests.length).toBe(before);
  });

  it('fails a call the provider refuses as a ModelCallError with its message', async () => {
    model.script(() => ({ error: { status: 400, message: 'context length exceeded' } }));
    await expect(askModel()).rejects.toThrow(ModelCallError);
    await expect(askModel()).rejects.toThrow(/context length exceeded/);
  });

  it("leaves the SDK's own telemetry off: the service traces its model calls itself", async () => {
    model.script(() => ({ text: 'Done.' }));
    // The SDK publishes on this channel by default (so that the check below can see it at all).
    const byDefault = await sdkTelemetryEvents(() =>
      generateText({ model: languageModel(), messages: [{ role: 'user', content: 'Hi' }], maxRetries: 0 }),
    );
    expect(byDefault).toBeGreaterThan(0);
    const ours = await sdkTelemetryEvents(askModel);
    expect(ours).toBe(0);
  });
});
