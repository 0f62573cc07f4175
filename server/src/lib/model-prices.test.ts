import { describe, expect, it } from 'vitest';
import { costOf, modelPricesEnv, priceOf } from './model-prices.ts';

describe('model prices', () => {
  const prices = modelPricesEnv.parse('{"m":{"input":2,"output":10},"anthropic/m":{"input":3,"output":15,"cachedInput":0.3}}');

  it('a provider-qualified price wins over the bare model name; an unknown model has none', () => {
    expect(priceOf(prices, 'anthropic', 'm')).toEqual({ input: 3, output: 15, cachedInput: 0.3 });
    expect(priceOf(prices, 'openai', 'm')).toEqual({ input: 2, output: 10 });
    expect(priceOf(prices, 'openai', 'other')).toBeUndefined();
  });

  it('prices cached input at its own price (or the input price), and unknown as null', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 100_000, cachedInputTokens: 400_000 };
    expect(costOf(priceOf(prices, 'anthropic', 'm'), usage)).toBeCloseTo(0.6 * 3 + 0.4 * 0.3 + 0.1 * 15, 10);
    expect(costOf(priceOf(prices, 'openai', 'm'), usage)).toBeCloseTo(2 + 1, 10);
    expect(costOf(undefined, usage)).toBeNull();
    // A provider that reports more cached tokens than input ones is not paid back.
    expect(costOf({ input: 1, output: 1 }, { inputTokens: 10, outputTokens: 0, cachedInputTokens: 20 })).toBeCloseTo(
      10 / 1e6,
      12,
    );
  });
});
