import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { roundUsd } from '../../lib/model-prices.ts';

export const USAGE_GROUPINGS = ['agent', 'model', 'user', 'day', 'experiment'] as const;
/** Which calls count: all, those of live actions only, or those of experiments' replays only. */
export const EXPERIMENT_CALLS = ['include', 'exclude', 'only'] as const;
export type ExperimentCalls = (typeof EXPERIMENT_CALLS)[number];
const experimentCalls = (which: ExperimentCalls | undefined) =>
  which === 'exclude' ? sql`and m.experiment_id is null` : which === 'only' ? sql`and m.experiment_id is not null` : sql``;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  totalTokens: number;
  /** The priced calls' cost (null: none of them had a price). */
  costUsd: number | null;
  /** Calls of a model without a price in MODEL_PRICES: their tokens count, their cost is unknown. */
  unpricedCalls: number;
  durationMs: number;
}

const TOTALS = sql`count(*)::int as calls, coalesce(sum(m.input_tokens), 0)::bigint as input_tokens,
  coalesce(sum(m.output_tokens), 0)::bigint as output_tokens, coalesce(sum(m.cached_input_tokens),
    0)::bigint as cached_input_tokens,
  sum(m.cost_usd) as cost_usd, (count(*) - count(m.cost_usd))::int as unpriced_calls, coalesce(sum(m.duration_ms),
    0)::bigint as duration_ms`;

/** Sums as PostgreSQL returns them (a bigint is a string) or as counted here. */
type TotalsRow = {
  calls: number;
  inputTokens: string | number;
  outputTokens: string | number;
  cachedInputTokens: string | number;
  costUsd: number | null;
  unpricedCalls: number;
  durationMs: string | number;
};
/** Totals as a query row gives them (none: no calls, all zero). */
export const toTotals = (row: TotalsRow | undefined): UsageTotals => ({
  calls: row?.calls ?? 0,
  inputTokens: Number(row?.inputTokens ?? 0),
  outputTokens: Number(row?.outputTokens ?? 0),
  cachedInputTokens: Number(row?.cachedInputTokens ?? 0),
  totalTokens: Number(row?.inputTokens ?? 0) + Number(row?.outputTokens ?? 0),
  costUsd: row?.costUsd == null ? null : roundUsd(row.costUsd),
  unpricedCalls: row?.unpricedCalls ?? 0,
  durationMs: Number(row?.durationMs ?? 0),
});

/** What each grouping groups by, and what names a group. */
const GROUPS: Record<UsageGrouping, { key: RawBuilder<string>; label: RawBuilder<string | null>; join: RawBuilder<unknown> }> = {
  agent: {
    key: sql`coalesce(m.agent_id::text, '')`,
    label: sql`max(g.name)`,
    join: sql`left join agents g on g.id = m.agent_id`,
  },
  model: { key: sql`m.provider || '/' || m.model`, label: sql`max(m.model)`, join: sql`` },
  user: { key: sql`coalesce(m.user_id::text, '')`, label: sql`max(u.email)`, join: sql`left join users u on u.id = m.user_id` },
  day: { key: sql`to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD')`, label: sql`null`, join: sql`` },
  experiment: {
    key: sql`coalesce(m.experiment_id::text, '')`,
    label: sql`case when max(x.id::text) is null then 'live actions'
      else 'experiment: ' || max(g.name) || ' version ' || max(x.version) end`,
    join: sql`left join experiments x on x.id = m.experiment_id left join agents g on g.id = x.agent_id`,
  },
};

export const usageRepo = {
  /** The calls of an org (or one agent's) in [from, to). */
  totals: async (
    db: Kysely<DB>,
    orgId: string,
    range: { from: Date; to: Date; agentId?: string; experiments?: ExperimentCalls },
  ): Promise<UsageTotals> => {
    const result = await sql<TotalsRow>`select ${TOTALS} from model_calls m
      where m.org_id = ${orgId} and m.created_at >= ${range.from} and m.created_at < ${range.to}
      ${range.agentId ? sql`and m.agent_id = ${range.agentId}` : sql``} ${experimentCalls(range.experiments)}`.execute(db);
    return toTotals(result.rows[0]);
  },

  /** The calls of an org in [from, to), per group. */
  grouped: async (
    db: Kysely<DB>,
    orgId: string,
    range: { from: Date; to: Date; experiments?: ExperimentCalls },
    grouping: UsageGrouping,
  ) => {
    const group = GROUPS[grouping];
    const result = await sql<TotalsRow & { key: string; label: string | null }>`
      select ${group.key} as key, ${group.label} as label, ${TOTALS}
      from model_calls m ${group.join}
      where m.org_id = ${orgId} and m.created_at >= ${range.from} and m.created_at < ${range.to}
        ${experimentCalls(range.experiments)}
      group by 1 order by 1`.execute(db);
    return result.rows.map((row) => ({ key: row.key, label: row.label, ...toTotals(row) }));
  },

  /**
   * An action's model calls, in order (the first `limit`), and the totals of all of them (summed in SQL, whatever their
   * number).
   */
  forAction: async (db: Kysely<DB>, orgId: string, actionId: string, limit = 500) => {
    const [calls, totals] = await Promise.all([
      db
        .selectFrom('modelCalls')
        .select(['provider', 'model', 'inputTokens', 'outputTokens', 'cachedInputTokens', 'costUsd', 'durationMs', 'createdAt'])
        .where('orgId', '=', orgId)
        .where('actionId', '=', actionId)
        .orderBy('createdAt')
        .orderBy('id')
        .limit(limit)
        .execute(),
      sql<TotalsRow>`select ${TOTALS} from model_calls m where m.org_id = ${orgId} and m.action_id = ${actionId}`.execute(db),
    ]);
    return { ...toTotals(totals.rows[0]), modelCalls: calls };
  },
};
