import { z } from 'zod';
import { BUDGET_ACTIONS, BUDGET_PERIODS } from '../../db/schema.ts';
import { EXPERIMENT_CALLS, USAGE_GROUPINGS } from './usage.repo.ts';

/** An org's or an agent's budget; null: none. */
export const budgetSchema = z
  .strictObject({
    period: z.enum(BUDGET_PERIODS).describe('The budget renews at the start of each UTC day or month'),
    maxCostUsd: z.number().min(0).max(1_000_000_000).optional().describe('US dollars per period, at the prices of MODEL_PRICES'),
    maxTokens: z.int().min(0).max(1_000_000_000_000).optional().describe('Input and output tokens per period'),
    onExceed: z
      .enum(BUDGET_ACTIONS)
      .describe('`pause`: the action waits for an approver, who may let it go on once; `fail`: the action fails'),
  })
  .refine((budget) => budget.maxCostUsd !== undefined || budget.maxTokens !== undefined, 'set maxCostUsd, maxTokens or both');

const totals = {
  calls: z.int(),
  inputTokens: z.int(),
  outputTokens: z.int(),
  cachedInputTokens: z.int().describe('Of the input tokens, those the provider read from its prompt cache'),
  totalTokens: z.int(),
  costUsd: z.number().nullable().describe('The cost of the priced calls; null when none had a price'),
  unpricedCalls: z.int().describe('Calls of a model without a price in MODEL_PRICES: counted in tokens, cost unknown'),
  durationMs: z.int(),
};
export const usageTotalsSchema = z.object(totals);

const dateOrTime = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })], {
    error: 'expected an ISO date (2026-11-01) or a date-time with its offset (2026-11-01T09:30:00Z)',
  })
  .transform((value) => new Date(value));
export const usageQuery = z.object({
  from: dateOrTime.optional().describe('Start (inclusive): an ISO date (UTC midnight) or date-time; default 30 days before `to`'),
  to: dateOrTime.optional().describe('End (exclusive): an ISO date or date-time; default now'),
  groupBy: z.enum(USAGE_GROUPINGS).default('day'),
  experiments: z
    .enum(EXPERIMENT_CALLS)
    .default('include')
    .describe("Experiments' model calls (real spend): counted (include), left out (exclude), or alone (only)"),
});

export const usageSchema = z
  .object({
    from: z.date(),
    to: z.date(),
    groupBy: z.enum(USAGE_GROUPINGS),
    totals: usageTotalsSchema,
    groups: z.array(
      usageTotalsSchema.extend({
        key: z
          .string()
          .describe(
            'The agent or user id, `provider/model`, the UTC day (YYYY-MM-DD) or the experiment id; empty: the action had ' +
              'none (for experiment: calls of live actions)',
          ),
        label: z
          .string()
          .nullable()
          .describe("The agent's name, the model, the user's email; null for a day or one since deleted"),
      }),
    ),
  })
  .meta({ id: 'Usage' });

const budgetStatus = {
  budget: budgetSchema,
  periodStart: z.date(),
  periodEnd: z.date(),
  spentTokens: z.int(),
  spentCostUsd: z.number(),
};
export const budgetsSchema = z
  .object({
    org: z.object(budgetStatus).nullable(),
    agents: z.array(z.object({ agentId: z.uuid(), agentName: z.string(), ...budgetStatus })),
  })
  .meta({ id: 'Budgets' });
export const orgBudgetBody = z.object({ budget: budgetSchema.nullable() });
