import { z } from 'zod';

/** A model's price in US dollars per million tokens; cached input costs the input price unless given. */
const priceSchema = z.strictObject({
  input: z.number().min(0).max(1_000_000),
  output: z.number().min(0).max(1_000_000),
  cachedInput: z.number().min(0).max(1_000_000).optional(),
});
export type ModelPrice = z.infer<typeof priceSchema>;
export type ModelPrices = ReadonlyMap<string, ModelPrice>;

/**
 * MODEL_PRICES: a JSON map of model -> `{ input, output, cachedInput? }` in USD per million tokens.
 * A key is a model's name (`gpt-4o-mini`) or provider and name (`anthropic/claude-sonnet-4-5`),
 * the more precise one winning.
 */
export const modelPricesEnv = z
  .string()
  .transform((text, context) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      context.addIssue({ code: 'custom', message: 'must be JSON: {"<model>": {"input": <usd per 1M>, "output": <usd per 1M>}}' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1).max(200), priceSchema))
  .transform((prices) => new Map(Object.entries(prices)) as ModelPrices);

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of the input tokens, those read from the provider's prompt cache. */
  cachedInputTokens: number;
}

/** The price of a provider's model, or undefined when the configuration has none. */
export const priceOf = (prices: ModelPrices, provider: string, model: string): ModelPrice | undefined =>
  prices.get(`${provider}/${model}`) ?? prices.get(model);

/** What tokens cost at a price, in USD (null: no price, so unknown). */
export function costOf(price: ModelPrice | undefined, usage: TokenUsage): number | null {
  if (!price) return null;
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens);
  const perMillion =
    (usage.inputTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + usage.outputTokens * price.output;
  return perMillion / 1_000_000;
}

/**
 * A sum of costs as shown, to a billionth of a dollar: costs are floating-point, and a budget's spend
 * (added to call by call) or a sum in SQL reads 0.00008000000000000003 where 0.00008 was spent.
 */
export const roundUsd = (usd: number): number => Math.round(usd * 1e9) / 1e9;
