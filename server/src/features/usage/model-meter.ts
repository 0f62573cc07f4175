import { costOf, priceOf, type ModelPrices, type TokenUsage } from '../../lib/model-prices.ts';
import type { BudgetsService, Reservation } from './budgets.service.ts';

/** What a model call is about to be made for. */
export interface MeteredCall {
  orgId: string;
  agentId: string;
  agentName: string | null;
  userId: string;
  provider: string;
  model: string;
  /** The call's expected use (its prompt's tokens, roughly); asked only when a budget applies. */
  expected: () => TokenUsage;
  /** An approver let the run go on over its budget once: this call is reserved regardless. */
  overBudget: boolean;
}
/** A call admitted: what it took, to be settled once it has answered. */
export interface MeterTicket {
  call: MeteredCall;
  reservation: Reservation | null;
}
export type MeterAdmission =
  | { kind: 'admitted'; ticket: MeterTicket }
  | { kind: 'refused'; reason: string; onExceed: 'pause' | 'fail'; details: Record<string, unknown> };

/**
 * Everything checked and counted around a model call: the budgets of the org and the agent
 * (reserved, then settled), the run-as user's message limit from their external provider (taken
 * atomically, given back when the call fails) and the call's price.
 */
export function createModelMeter(deps: {
  budgets: Pick<BudgetsService, 'admit' | 'settle'>;
  userLimits: { take(userId: string): Promise<string | undefined>; giveBack(userId: string): Promise<void> };
  prices: ModelPrices;
}) {
  return {
    async admit(call: MeteredCall): Promise<MeterAdmission> {
      const budget = await deps.budgets.admit(call);
      if (budget.kind === 'exceeded') {
        const { scope, budget: limits, spent } = budget;
        return { kind: 'refused', reason: budget.reason, onExceed: budget.onExceed, details: { scope, budget: limits, spent } };
      }
      const refusal = await deps.userLimits.take(call.userId);
      if (refusal) {
        await deps.budgets.settle(budget.reservation, null);
        return { kind: 'refused', reason: refusal, onExceed: 'fail', details: {} };
      }
      return { kind: 'admitted', ticket: { call, reservation: budget.reservation } };
    },

    /** The call answered with this use (null: it failed). Returns its cost (null: the model has no price). */
    async settle(ticket: MeterTicket, used: TokenUsage | null): Promise<number | null> {
      const cost = used ? costOf(priceOf(deps.prices, ticket.call.provider, ticket.call.model), used) : null;
      await deps.budgets.settle(
        ticket.reservation,
        used ? { tokens: used.inputTokens + used.outputTokens, costUsd: cost ?? 0 } : null,
      );
      if (!used) await deps.userLimits.giveBack(ticket.call.userId);
      return cost;
    },
  };
}

export type ModelMeter = ReturnType<typeof createModelMeter>;
