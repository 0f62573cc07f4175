import type { ColumnType } from 'kysely';

export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];
/** What happens to an action whose next model call the budget has no room for. */
export const BUDGET_ACTIONS = ['pause', 'fail'] as const;
export type BudgetAction = (typeof BUDGET_ACTIONS)[number];

/** An org's or an agent's budget: at least one of the maxima. */
export interface Budget {
  period: BudgetPeriod;
  maxCostUsd?: number;
  maxTokens?: number;
  onExceed: BudgetAction;
}
export type BudgetColumn = ColumnType<Budget | null, string | null, string | null>;

/** One model call: tokens as the provider reported them, and its cost when the model has a price. */
export interface ModelCallsTable {
  id: string;
  orgId: string;
  actionId: string | null;
  agentId: string | null;
  userId: string | null;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  costUsd: number | null;
  durationMs: number;
  createdAt: Date;
  /** A call an experiment's replay made (then it has no action). */
  experimentId: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A budget's spend in one period (reserved before each call, settled after it). */
export interface BudgetSpendTable {
  scopeId: string;
  periodKey: string;
  orgId: string;
  tokens: ColumnType<string, number | string, number | string>;
  costUsd: number;
  updatedAt: ColumnType<Date, Date | undefined, Date>;
}
