import type { Kysely } from 'kysely';
import type { Budget, BudgetAction, BudgetPeriod, DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { costOf, priceOf, roundUsd, type ModelPrices, type TokenUsage } from '../../lib/model-prices.ts';
import { BUS_TOPICS, INVALIDATE_ALL, type ProcessBus } from '../../lib/process-bus.ts';
import { budgetSpendRepo, type BudgetScope, type Period, type Spend } from './budget-spend.repo.ts';
import { usageRepo } from './usage.repo.ts';

/** The UTC day or month `now` falls in; its key names the budget's spend row. */
export function periodOf(period: BudgetPeriod, now: Date): Period {
  const [year, month, day] = [now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()];
  const start = new Date(period === 'day' ? Date.UTC(year, month, day) : Date.UTC(year, month, 1));
  const end = new Date(period === 'day' ? Date.UTC(year, month, day + 1) : Date.UTC(year, month + 1, 1));
  return { key: `${period}:${start.toISOString().slice(0, period === 'day' ? 10 : 7)}`, start, end };
}

/** What a model call took from its budgets, settled once the provider says what it used. */
export interface Reservation {
  scopes: Array<{ id: string; periodKey: string }>;
  spend: Spend;
}
export type Admission =
  | { kind: 'admitted'; reservation: Reservation | null }
  | {
      kind: 'exceeded';
      onExceed: BudgetAction;
      reason: string;
      scope: { kind: 'org' | 'agent'; id: string };
      budget: Budget;
      spent: Spend;
    };

class Exceeded extends Error {
  readonly admission: Extract<Admission, { kind: 'exceeded' }>;
  constructor(admission: Extract<Admission, { kind: 'exceeded' }>) {
    super(admission.reason);
    this.admission = admission;
  }
}

const describe = (scope: BudgetScope, name: string | null, spent: Spend, period: Period) => {
  const { budget } = scope;
  const limits = [
    budget.maxTokens !== undefined ? `${spent.tokens} of ${budget.maxTokens} tokens` : undefined,
    budget.maxCostUsd !== undefined ? `$${spent.costUsd.toFixed(4)} of $${budget.maxCostUsd}` : undefined,
  ].filter(Boolean);
  const who = scope.kind === 'org' ? 'the organization' : `the agent${name ? ` "${name}"` : ''}`;
  return `budget exceeded: ${who} has used ${limits.join(' and ')} this ${budget.period} (resets ${period.end.toISOString()})`;
};

/**
 * Budgets of orgs and agents, checked before each model call: the call's expected spend (its prompt's
 * tokens, roughly) is reserved atomically from every budget that applies, in one transaction, and
 * corrected by what the provider reports afterwards. A run is admitted while a budget is under its
 * maxima, so concurrent runs overshoot it by at most one call each (docs/usage-and-budgets.md).
 * Budgets are cached per org and forgotten, in every process, when one changes.
 */
export function createBudgetsService(deps: { db: Kysely<DB>; bus: ProcessBus; clock: Clock; prices: ModelPrices }) {
  const cache = new Map<string, Promise<Awaited<ReturnType<typeof budgetSpendRepo.budgets>>>>();
  deps.bus.subscribe(BUS_TOPICS.budgets, (orgId) => (orgId === INVALIDATE_ALL ? cache.clear() : cache.delete(orgId)));
  const budgetsOf = (orgId: string) => {
    let budgets = cache.get(orgId);
    if (!budgets) {
      budgets = budgetSpendRepo.budgets(deps.db, orgId);
      budgets.catch(() => cache.delete(orgId));
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      cache.set(orgId, budgets);
    }
    return budgets;
  };

  /** A budget changed: it counts its period again from the recorded calls, and every process reads it again. */
  async function changed(orgId: string, scopeId: string): Promise<void> {
    await budgetSpendRepo.forget(deps.db, scopeId);
    cache.delete(orgId);
    await deps.bus.publish(BUS_TOPICS.budgets, orgId);
  }

  async function status(orgId: string) {
    const budgets = await budgetSpendRepo.budgets(deps.db, orgId);
    const now = deps.clock.now();
    const spentOf = async (scope: { kind: 'org' | 'agent'; id: string }, budget: Budget) => {
      const period = periodOf(budget.period, now);
      const range = { from: period.start, to: period.end, agentId: scope.kind === 'agent' ? scope.id : undefined };
      const [recorded, reserved] = await Promise.all([
        usageRepo.totals(deps.db, orgId, range),
        budgetSpendRepo.spent(deps.db, scope.id, period.key),
      ]);
      // The spend row holds reservations in flight too; without one (no call yet this period), the recorded calls.
      const spent =
        reserved.tokens > 0 || reserved.costUsd > 0
          ? reserved
          : { tokens: recorded.inputTokens + recorded.outputTokens, costUsd: recorded.costUsd ?? 0 };
      return {
        budget,
        periodStart: period.start,
        periodEnd: period.end,
        spentTokens: spent.tokens,
        spentCostUsd: roundUsd(spent.costUsd),
      };
    };
    return {
      org: budgets.org ? await spentOf({ kind: 'org', id: orgId }, budgets.org) : null,
      agents: await Promise.all(
        budgets.agents.map(async (agent) => ({
          agentId: agent.id,
          agentName: agent.name,
          ...(await spentOf({ kind: 'agent', id: agent.id }, agent.budget)),
        })),
      ),
    };
  }

  return {
    /** The org's budget and its agents', each with what was spent of it in its current period. */
    status,

    /**
     * Reserves a call's expected spend from the org's and the agent's budgets, or says which one has
     * no room. `overBudget`: an approver let the run go on once; the call is reserved regardless.
     */
    async admit(call: {
      orgId: string;
      agentId: string;
      agentName: string | null;
      provider: string;
      model: string;
      /** Asked only when a budget applies. */
      expected: () => TokenUsage;
      overBudget: boolean;
    }): Promise<Admission> {
      const budgets = await budgetsOf(call.orgId);
      const agent = budgets.agents.find((candidate) => candidate.id === call.agentId);
      const scopes: BudgetScope[] = [
        ...(budgets.org ? [{ kind: 'org' as const, id: call.orgId, orgId: call.orgId, budget: budgets.org }] : []),
        ...(agent ? [{ kind: 'agent' as const, id: agent.id, orgId: call.orgId, budget: agent.budget }] : []),
      ];
      if (scopes.length === 0) return { kind: 'admitted', reservation: null };
      const expected = call.expected();
      const spend = {
        tokens: expected.inputTokens + expected.outputTokens,
        costUsd: costOf(priceOf(deps.prices, call.provider, call.model), expected) ?? 0,
      };
      const now = deps.clock.now();
      try {
        return await deps.db.transaction().execute(async (trx) => {
          const taken: Reservation = { scopes: [], spend };
          for (const scope of scopes) {
            const period = periodOf(scope.budget.period, now);
            let room = await budgetSpendRepo.take(trx, scope, period, spend);
            if (!room && (await budgetSpendRepo.open(trx, scope, period)))
              room = await budgetSpendRepo.take(trx, scope, period, spend);
            if (!room && call.overBudget) await budgetSpendRepo.adjust(trx, [{ id: scope.id, periodKey: period.key }], spend);
            else if (!room) {
              const spent = await budgetSpendRepo.spent(trx, scope.id, period.key);
              throw new Exceeded({
                kind: 'exceeded',
                onExceed: scope.budget.onExceed,
                reason: describe(scope, scope.kind === 'agent' ? call.agentName : null, spent, period),
                scope: { kind: scope.kind, id: scope.id },
                budget: scope.budget,
                spent,
              });
            }
            taken.scopes.push({ id: scope.id, periodKey: period.key });
          }
          return { kind: 'admitted' as const, reservation: taken };
        });
      } catch (error) {
        if (error instanceof Exceeded) return error.admission;
        throw error;
      }
    },

    /** Corrects a reservation by what the call used (null: it failed, nothing is known to be used). */
    async settle(reservation: Reservation | null, used: Spend | null): Promise<void> {
      if (!reservation || reservation.scopes.length === 0) return;
      const actual = used ?? { tokens: 0, costUsd: 0 };
      const delta = { tokens: actual.tokens - reservation.spend.tokens, costUsd: actual.costUsd - reservation.spend.costUsd };
      if (delta.tokens !== 0 || delta.costUsd !== 0) await budgetSpendRepo.adjust(deps.db, reservation.scopes, delta);
    },

    async setOrgBudget(orgId: string, budget: Budget | null) {
      await budgetSpendRepo.setOrgBudget(deps.db, orgId, budget);
      await changed(orgId, orgId);
      return (await status(orgId)).org;
    },

    /**
     * Writes an agent (`write`: its own columns) and its budget (undefined: unchanged, null: none) in
     * one transaction; a changed budget then applies from the agent's next model call, in every process.
     */
    async writeAgent<T extends { id: string; budget: Budget | null }>(
      orgId: string,
      budget: Budget | null | undefined,
      write: (trx: Kysely<DB>) => Promise<T | undefined>,
    ): Promise<T | undefined> {
      const agent = await deps.db.transaction().execute(async (trx) => {
        const written = await write(trx);
        if (!written || budget === undefined) return written;
        await budgetSpendRepo.setAgentBudget(trx, orgId, written.id, budget);
        return { ...written, budget };
      });
      if (agent && budget !== undefined) await changed(orgId, agent.id);
      return agent;
    },

    /** The agent is gone: its spend rows go, and no process keeps its budget. */
    agentDeleted: (orgId: string, agentId: string) => changed(orgId, agentId),
  };
}

export type BudgetsService = ReturnType<typeof createBudgetsService>;
