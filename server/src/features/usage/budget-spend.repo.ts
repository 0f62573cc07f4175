import { sql, type Kysely } from 'kysely';
import type { Budget, DB } from '../../db/schema.ts';

/** A budget's scope: the org's, or one agent's. */
export interface BudgetScope {
  kind: 'org' | 'agent';
  /** The org's or the agent's id. */
  id: string;
  orgId: string;
  budget: Budget;
}
export interface Spend {
  tokens: number;
  costUsd: number;
}
export interface Period {
  key: string;
  start: Date;
  end: Date;
}

/**
 * The spend of budgets per period. A scope's row is created on its first reservation of a period,
 * seeded from the model calls already recorded in it (a budget set mid-period counts what came
 * before); after that, runs reserve from it and settle what their calls cost.
 */
export const budgetSpendRepo = {
  /** Each budget of an org: its own, and its agents'. */
  budgets: async (db: Kysely<DB>, orgId: string) => {
    const [org, agents] = await Promise.all([
      db.selectFrom('organizations').select('budget').where('id', '=', orgId).executeTakeFirst(),
      db
        .selectFrom('agents')
        .select(['id', 'name', 'budget'])
        .where('orgId', '=', orgId)
        .where('budget', 'is not', null)
        .execute(),
    ]);
    return {
      org: org?.budget ?? null,
      agents: agents.map((agent) => ({ id: agent.id, name: agent.name, budget: agent.budget! })),
    };
  },

  /**
   * Takes `spend` from the scope's period if it has room now (under each of its maxima), in one
   * statement: concurrent runs in any process see each other's reservations.
   */
  take: async (db: Kysely<DB>, scope: BudgetScope, period: Period, spend: Spend): Promise<Spend | undefined> => {
    const result = await sql<{ tokens: string; costUsd: number }>`
      update budget_spend set tokens = tokens + ${spend.tokens}, cost_usd = cost_usd + ${spend.costUsd}, updated_at = now()
      where scope_id = ${scope.id} and period_key = ${period.key}
        and (${scope.budget.maxTokens ?? null}::bigint is null or tokens < ${scope.budget.maxTokens ?? null}::bigint)
        and (${scope.budget.maxCostUsd ?? null}::float8 is null or cost_usd < ${scope.budget.maxCostUsd ?? null}::float8)
      returning tokens, cost_usd`.execute(db);
    const row = result.rows[0];
    return row ? { tokens: Number(row.tokens), costUsd: row.costUsd } : undefined;
  },

  /** Opens the scope's period, seeded from the calls recorded in it; false when it was open already. */
  open: async (db: Kysely<DB>, scope: BudgetScope, period: Period): Promise<boolean> => {
    const result = await sql`
      insert into budget_spend (scope_id, period_key, org_id, tokens, cost_usd)
      select ${scope.id}, ${period.key}, ${scope.orgId}, coalesce(sum(input_tokens + output_tokens), 0),
        coalesce(sum(cost_usd), 0)
      from model_calls
      where org_id = ${scope.orgId} and created_at >= ${period.start} and created_at < ${period.end}
        ${scope.kind === 'agent' ? sql`and agent_id = ${scope.id}` : sql``}
        -- an open period (a budget over its maxima) is not counted again
        and not exists (select 1 from budget_spend where scope_id = ${scope.id} and period_key = ${period.key})
      on conflict (scope_id, period_key) do nothing`.execute(db);
    return Number(result.numAffectedRows ?? 0) > 0;
  },

  /** The spend of each scope in its period (none yet: zero). */
  spent: async (db: Kysely<DB>, scopeId: string, periodKey: string): Promise<Spend> => {
    const row = await db
      .selectFrom('budgetSpend')
      .select(['tokens', 'costUsd'])
      .where('scopeId', '=', scopeId)
      .where('periodKey', '=', periodKey)
      .executeTakeFirst();
    return { tokens: Number(row?.tokens ?? 0), costUsd: row?.costUsd ?? 0 };
  },

  /** Corrects reservations by what the call cost (negative: less than reserved). */
  adjust: (db: Kysely<DB>, scopes: Array<{ id: string; periodKey: string }>, delta: Spend) =>
    sql`
      update budget_spend s set tokens = greatest(0, s.tokens + ${delta.tokens}), cost_usd = greatest(0,
        s.cost_usd + ${delta.costUsd}),
        updated_at = now()
      from unnest(${scopes.map((scope) => scope.id)}::uuid[], ${scopes.map((scope) => scope.periodKey)}::text[]) as t(id, key)
      where s.scope_id = t.id and s.period_key = t.key`.execute(db),

  /** A changed budget counts its period again from the recorded calls, at its next reservation. */
  forget: (db: Kysely<DB>, scopeId: string) => db.deleteFrom('budgetSpend').where('scopeId', '=', scopeId).execute(),

  setAgentBudget: (db: Kysely<DB>, orgId: string, agentId: string, budget: Budget | null) =>
    db
      .updateTable('agents')
      .set({ budget: budget === null ? null : JSON.stringify(budget) })
      .where('orgId', '=', orgId)
      .where('id', '=', agentId)
      .execute(),

  setOrgBudget: (db: Kysely<DB>, orgId: string, budget: Budget | null) =>
    db
      .updateTable('organizations')
      .set({ budget: budget === null ? null : JSON.stringify(budget) })
      .where('id', '=', orgId)
      .execute(),
};
