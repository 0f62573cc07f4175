import { createBudgetsService } from '../features/usage/budgets.service.ts';
import { createUsageService } from '../features/usage/usage.service.ts';
import type { Shared } from './shared.ts';

/** What model calls used and cost, and the budgets that bound them (the one owner of every budget: the org's and its agents'). */
export function composeUsage({ config, db, bus, clock }: Shared) {
  return {
    budgets: createBudgetsService({ db, bus, clock, prices: config.model.prices }),
    usage: createUsageService({ db, clock }),
  };
}
