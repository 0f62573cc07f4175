import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { type ExperimentCalls, toTotals, type UsageGrouping, usageRepo, type UsageTotals } from './usage.repo.ts';

const DAY_MS = 86_400_000;
/** The longest range one request reads. */
const MAX_RANGE_DAYS = 366;

/** What an org's model calls used and cost, over a range, per agent, model, user or UTC day. */
export function createUsageService(deps: { db: Kysely<DB>; clock: Clock }) {
  return {
    async summary(orgId: string, query: { from?: Date; to?: Date; groupBy: UsageGrouping; experiments: ExperimentCalls }) {
      const to = query.to ?? deps.clock.now();
      const from = query.from ?? new Date(to.getTime() - 30 * DAY_MS);
      if (from >= to) throw new AppError('validation_failed', 'querystring/from: must be before `to`');
      if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS)
        throw new AppError('validation_failed', `querystring/from: the range is at most ${MAX_RANGE_DAYS} days`);
      const [totals, groups] = await Promise.all([
        usageRepo.totals(deps.db, orgId, { from, to, experiments: query.experiments }),
        usageRepo.grouped(deps.db, orgId, { from, to, experiments: query.experiments }, query.groupBy),
      ]);
      return {
        from,
        to,
        groupBy: query.groupBy,
        totals,
        groups: query.groupBy === 'day' ? everyDay(from, to, groups) : groups,
      };
    },
  };
}

/** Every UTC day of the range, those without calls at zero: a chart shows the gaps as gaps. */
function everyDay<T extends UsageTotals & { key: string; label: string | null }>(from: Date, to: Date, groups: T[]) {
  const byDay = new Map(groups.map((group) => [group.key, group]));
  const days: Array<UsageTotals & { key: string; label: string | null }> = [];
  for (let day = Math.floor(from.getTime() / DAY_MS) * DAY_MS; day < to.getTime(); day += DAY_MS) {
    const key = new Date(day).toISOString().slice(0, 10);
    days.push(byDay.get(key) ?? { key, label: null, ...toTotals(undefined) });
  }
  return days;
}

export type UsageService = ReturnType<typeof createUsageService>;
