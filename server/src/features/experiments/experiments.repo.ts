import { sql, type Insertable, type Kysely } from 'kysely';
import type { DB, ExperimentOutcome, ExperimentSelection, ExperimentsTable, ModelCallsTable } from '../../db/schema.ts';
import { olderThan } from '../../db/keyset.ts';
import type { Cursor } from '../../lib/pagination.ts';
import { TERMINAL_STATUSES } from '../actions/lifecycle.ts';

/** One side's totals over an experiment's results: the original runs', or the candidate's. */
export interface SideTotals {
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  approvalsNeeded: number;
}

/** An experiment with its progress (done of total) and its stored results per outcome, counted in one pass over them. */
function withProgress(db: Kysely<DB>, orgId: string) {
  return db
    .selectFrom('experiments as e')
    .innerJoinLateral(
      (eb) =>
        eb
          .selectFrom('experimentResults as r')
          .whereRef('r.experimentId', '=', 'e.id')
          .select((eb) => [
            eb.fn.countAll<string>().as('total'),
            eb.fn.countAll<string>().filterWhere('r.state', '=', 'done').as('done'),
            eb.fn.countAll<string>().filterWhere('r.outcome', '=', 'same').as('same'),
            eb.fn.countAll<string>().filterWhere('r.outcome', '=', 'changed').as('changed'),
            eb.fn.countAll<string>().filterWhere('r.outcome', '=', 'failed').as('failed'),
          ])
          .as('p'),
      (join) => join.onTrue(),
    )
    .selectAll('e')
    .select(['p.total', 'p.done', 'p.same', 'p.changed', 'p.failed'])
    .where('e.orgId', '=', orgId);
}
export type ExperimentRow = Awaited<ReturnType<ReturnType<typeof withProgress>['executeTakeFirstOrThrow']>>;

/** A result row taken by this process: the experiment's own fields come with it. */
export interface ClaimedResult {
  experimentId: string;
  actionId: string;
  orgId: string;
  agentId: string;
  version: number;
  liveReadOnlyTools: boolean;
  attempts: number;
}

export const experimentsRepo = {
  /** Finished actions of the agent that the selection names, newest first, at most `limit`. */
  select: (db: Kysely<DB>, orgId: string, agentId: string, selection: ExperimentSelection) =>
    db
      .selectFrom('actions')
      .select(['id', 'status'])
      .where('orgId', '=', orgId)
      .where('agentId', '=', agentId)
      .where('status', 'in', TERMINAL_STATUSES)
      .$if(selection.actionIds !== undefined, (q) => q.where('id', 'in', selection.actionIds!))
      .$if(selection.filter?.from !== undefined, (q) => q.where('createdAt', '>=', new Date(selection.filter!.from!)))
      .$if(selection.filter?.to !== undefined, (q) => q.where('createdAt', '<', new Date(selection.filter!.to!)))
      .$if(selection.filter?.eventType !== undefined, (q) => q.where('eventType', '=', selection.filter!.eventType!))
      .$if(selection.filter?.status !== undefined, (q) => q.where('status', '=', selection.filter!.status as never))
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .limit(selection.limit)
      .execute(),

  insert: async (trx: Kysely<DB>, experiment: Insertable<ExperimentsTable>, actionIds: string[]) => {
    await trx.insertInto('experiments').values(experiment).execute();
    await trx
      .insertInto('experimentResults')
      .values(
        actionIds.map((actionId, position) => ({ experimentId: experiment.id, actionId, orgId: experiment.orgId, position })),
      )
      .execute();
  },

  find: (db: Kysely<DB>, orgId: string, id: string) => withProgress(db, orgId).where('e.id', '=', id).executeTakeFirst(),

  list: (db: Kysely<DB>, orgId: string, agentId: string | undefined, limit: number, after?: Cursor) =>
    withProgress(db, orgId)
      .$if(agentId !== undefined, (q) => q.where('e.agentId', '=', agentId!))
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 'e.createdAt', 'e.id')))
      .orderBy('e.createdAt', 'desc')
      .orderBy('e.id', 'desc')
      .limit(limit + 1)
      .execute(),

  /** Per outcome, and each side's tokens, cost and approvals, over the results stored so far. */
  summary: async (db: Kysely<DB>, experimentId: string) => {
    const side = (name: 'baseline' | 'candidate') => sql`jsonb_build_object(
      'inputTokens', coalesce(sum((${sql.ref(name)}->>'inputTokens')::bigint), 0),
      'outputTokens', coalesce(sum((${sql.ref(name)}->>'outputTokens')::bigint), 0),
      'costUsd', sum((${sql.ref(name)}->>'costUsd')::float8),
      'approvalsNeeded', coalesce(sum((${sql.ref(name)}->>'approvalsNeeded')::int), 0))`;
    const result = await sql<{ outcomes: Record<ExperimentOutcome, number>; baseline: SideTotals; candidate: SideTotals }>`
      select jsonb_build_object('same', count(*) filter (where outcome = 'same'),
          'changed', count(*) filter (where outcome = 'changed'),
          'failed', count(*) filter (where outcome = 'failed')) as outcomes,
        ${side('baseline')} as baseline, ${side('candidate')} as candidate
      from experiment_results where experiment_id = ${experimentId} and state = 'done'`.execute(db);
    return result.rows[0]!;
  },

  /** Stored results in selection order, after `afterPosition`, `limit + 1` of them. */
  results: (
    db: Kysely<DB>,
    experimentId: string,
    query: { outcome?: ExperimentOutcome; limit: number; afterPosition?: number },
  ) =>
    db
      .selectFrom('experimentResults as r')
      .innerJoin('actions as a', 'a.id', 'r.actionId')
      .select(['r.actionId', 'a.eventType', 'a.externalId', 'r.position', 'r.outcome', 'r.baseline', 'r.candidate'])
      .select(['r.differences', 'r.finishedAt'])
      .where('r.experimentId', '=', experimentId)
      .where('r.state', '=', 'done')
      .$if(query.outcome !== undefined, (q) => q.where('r.outcome', '=', query.outcome!))
      .$if(query.afterPosition !== undefined, (q) => q.where('r.position', '>', query.afterPosition!))
      .orderBy('r.position')
      .limit(query.limit + 1)
      .execute(),

  /**
   * Takes up to `limit` pending results of unfinished experiments, oldest experiment first, whose
   * lease is free or lapsed (its process died); the experiment is running from its first claim.
   */
  claim: async (db: Kysely<DB>, limit: number, leaseMs: number): Promise<ClaimedResult[]> => {
    const result = await sql<ClaimedResult>`
      with claimable as (
        select r.experiment_id, r.action_id from experiment_results r join experiments e on e.id = r.experiment_id
        where r.state = 'pending' and e.state in ('queued', 'running')
          and (r.lease_expires_at is null or r.lease_expires_at <= now())
        order by e.created_at, r.position limit ${limit} for update of r skip locked
      ), claimed as (
        update experiment_results r set lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond',
          attempts = r.attempts + 1
        from claimable c where r.experiment_id = c.experiment_id and r.action_id = c.action_id
        returning r.experiment_id, r.action_id, r.org_id, r.attempts
      ), started as (
        update experiments e set state = 'running', started_at = coalesce(e.started_at, now()), updated_at = now()
        where e.id in (select experiment_id from claimed) and e.state = 'queued'
      )
      select c.experiment_id, c.action_id, c.org_id, c.attempts, e.agent_id, e.version, e.live_read_only_tools
      from claimed c join experiments e on e.id = c.experiment_id`.execute(db);
    return result.rows;
  },

  renewLeases: (db: Kysely<DB>, keys: Array<{ experimentId: string; actionId: string }>, leaseMs: number) =>
    sql`update experiment_results r set lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond'
      from unnest(${keys.map((k) => k.experimentId)}::uuid[], ${keys.map((k) => k.actionId)}::uuid[]) as k(e, a)
      where r.experiment_id = k.e and r.action_id = k.a and r.state = 'pending'`.execute(db),

  /**
   * Gives a result's lease up (its process is stopping, or its experiment ended): another process
   * takes it at once, and the attempt does not count as one cut short.
   */
  release: (db: Kysely<DB>, key: { experimentId: string; actionId: string }) =>
    db
      .updateTable('experimentResults')
      .set({ leaseExpiresAt: null, attempts: sql<number>`greatest(attempts - 1, 0)` })
      .where('experimentId', '=', key.experimentId)
      .where('actionId', '=', key.actionId)
      .where('state', '=', 'pending')
      .execute(),

  /**
   * Stores a result once, while its experiment runs (a replay run again after a crash finds it
   * stored, and stores nothing). Returns whether it was stored.
   */
  storeResult: async (
    db: Kysely<DB>,
    key: { experimentId: string; actionId: string },
    result: { outcome: ExperimentOutcome; baseline: unknown; candidate: unknown; differences: unknown[] },
  ): Promise<boolean> => {
    const stored = await db
      .updateTable('experimentResults')
      .set({
        state: 'done',
        outcome: result.outcome,
        baseline: JSON.stringify(result.baseline),
        candidate: JSON.stringify(result.candidate),
        differences: JSON.stringify(result.differences),
        leaseExpiresAt: null,
        finishedAt: sql<Date>`now()`,
      })
      .where('experimentId', '=', key.experimentId)
      .where('actionId', '=', key.actionId)
      .where('state', '=', 'pending')
      .where((eb) =>
        eb.exists(eb.selectFrom('experiments').where('id', '=', key.experimentId).where('state', '=', 'running').select('id')),
      )
      .executeTakeFirst();
    return stored.numUpdatedRows > 0n;
  },

  /**
   * The experiment completes once no result is pending. Run after each result's own commit: of
   * results stored at the same moment, the last to commit sees every other one stored.
   */
  completeIfDone: (db: Kysely<DB>, experimentId: string) =>
    db
      .updateTable('experiments')
      .set({ state: 'completed', finishedAt: sql<Date>`now()`, updatedAt: sql<Date>`now()` })
      .where('id', '=', experimentId)
      .where('state', '=', 'running')
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('experimentResults')
              .where('experimentId', '=', experimentId)
              .where('state', '=', 'pending')
              .select('actionId'),
          ),
        ),
      )
      .execute(),

  /** Ends an unfinished experiment (cancelled, or failed with the reason); undefined when it had ended already. */
  end: (db: Kysely<DB>, orgId: string, id: string, state: 'cancelled' | 'failed', error: string | null = null) =>
    db
      .updateTable('experiments')
      .set({ state, error, finishedAt: sql<Date>`now()`, updatedAt: sql<Date>`now()` })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .where('state', 'in', ['queued', 'running'])
      .returning('id')
      .executeTakeFirst(),

  /** Of these experiments, the ones that are still unfinished. */
  unfinished: async (db: Kysely<DB>, ids: string[]): Promise<Set<string>> =>
    new Set(
      ids.length === 0
        ? []
        : (
            await db
              .selectFrom('experiments')
              .select('id')
              .where('id', 'in', ids)
              .where('state', 'in', ['queued', 'running'])
              .execute()
          ).map((row) => row.id),
    ),

  insertModelCall: (db: Kysely<DB>, row: Insertable<ModelCallsTable>) => db.insertInto('modelCalls').values(row).execute(),

  /** What an action's run ended with, and its model steps (its assistant messages). */
  actionRecord: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('actions as a')
      .select((eb) => [
        'a.status',
        'a.result',
        'a.error',
        eb
          .selectFrom('threadMessages as m')
          .select(eb.fn.countAll<string>().as('steps'))
          .whereRef('m.threadId', '=', 'a.threadId')
          .whereRef('m.actionId', '=', 'a.id')
          .where('m.role', '=', 'assistant')
          .as('steps'),
      ])
      .where('a.id', '=', actionId)
      .executeTakeFirst(),

  actionUsage: async (db: Kysely<DB>, actionId: string) => {
    const row = await db
      .selectFrom('modelCalls')
      .select((eb) => [
        eb.fn.coalesce(eb.fn.sum<string>('inputTokens'), sql<string>`0`).as('inputTokens'),
        eb.fn.coalesce(eb.fn.sum<string>('outputTokens'), sql<string>`0`).as('outputTokens'),
        eb.fn.sum<number | null>('costUsd').as('costUsd'),
      ])
      .where('actionId', '=', actionId)
      .executeTakeFirstOrThrow();
    return { inputTokens: Number(row.inputTokens), outputTokens: Number(row.outputTokens), costUsd: row.costUsd ?? null };
  },
};
