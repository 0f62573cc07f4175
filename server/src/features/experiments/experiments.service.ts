import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { DB, ExperimentOutcome, ExperimentSelection } from '../../db/schema.ts';
import { isForeignKeyViolation } from '../../db/errors.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { decodeCursor, decodeNumberCursor, encodeCursor, encodeNumberCursor } from '../../lib/pagination.ts';
import { BUS_TOPICS, type ProcessBus } from '../../lib/process-bus.ts';
import { agentVersionsRepo } from '../agents/agent-versions.repo.ts';
import { agentsRepo } from '../agents/agents.repo.ts';
import type { experimentInput } from './experiments.schemas.ts';
import { type ExperimentRow, experimentsRepo } from './experiments.repo.ts';
import type { Difference, RunRecord } from './experiment-record.ts';

const toExperiment = (row: ExperimentRow) => ({
  id: row.id,
  agentId: row.agentId,
  version: row.version,
  state: row.state,
  liveReadOnlyTools: row.liveReadOnlyTools,
  selection: row.selection,
  progress: { total: Number(row.total), done: Number(row.done) },
  outcomes: { same: Number(row.same), changed: Number(row.changed), failed: Number(row.failed) },
  error: row.error,
  createdBy: row.createdByUserId,
  createdAt: row.createdAt,
  startedAt: row.startedAt,
  finishedAt: row.finishedAt,
});

/** Experiments: a candidate version of an agent replayed on its past actions (the replays are the dispatcher's). */
export function createExperimentsService(deps: { db: Kysely<DB>; bus: ProcessBus }) {
  const { db } = deps;

  async function experimentOf(orgId: string, id: string) {
    const row = await experimentsRepo.find(db, orgId, id);
    if (!row) throw notFound('Experiment');
    return row;
  }

  return {
    async create(orgId: string, agentId: string, input: z.output<typeof experimentInput>, userId: string) {
      if (!(await agentsRepo.find(db, orgId, agentId))) throw notFound('Agent');
      if (!(await agentVersionsRepo.find(db, orgId, agentId, input.version)))
        throw new AppError('validation_failed', `body/version: the agent has no version ${input.version}`);
      const { actionIds, filter } = input;
      if (actionIds) {
        const found = new Set(
          (await experimentsRepo.select(db, orgId, agentId, { actionIds, limit: actionIds.length })).map((row) => row.id),
        );
        const others = actionIds.filter((id) => !found.has(id));
        if (others.length > 0)
          throw new AppError('validation_failed', `body/actionIds: not finished actions of this agent: ${others.join(', ')}`);
      }
      const selection: ExperimentSelection = {
        ...(actionIds && { actionIds }),
        ...(filter && {
          filter: { ...filter, from: filter.from?.toISOString(), to: filter.to?.toISOString() },
        }),
        limit: input.limit ?? actionIds?.length ?? 50,
      };
      const selected = await experimentsRepo.select(db, orgId, agentId, selection);
      if (selected.length === 0)
        throw new AppError('validation_failed', 'body: no finished action of this agent matches the selection');
      const id = randomUUID();
      try {
        await db.transaction().execute((trx) =>
          experimentsRepo.insert(
            trx,
            {
              id,
              orgId,
              agentId,
              version: input.version,
              state: 'queued',
              liveReadOnlyTools: input.liveReadOnlyTools,
              selection: JSON.stringify(selection),
              createdByUserId: userId,
            },
            selected.map((row) => row.id),
          ),
        );
      } catch (error) {
        // The agent (and its versions) deleted since it was found.
        if (isForeignKeyViolation(error)) throw notFound('Agent');
        throw error;
      }
      deps.bus.signal(BUS_TOPICS.experiments);
      return toExperiment(await experimentOf(orgId, id));
    },

    async list(orgId: string, query: { agentId?: string; limit: number; cursor?: string }) {
      const rows = await experimentsRepo.list(db, orgId, query.agentId, query.limit, decodeCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return {
        experiments: page.map(toExperiment),
        nextCursor: rows.length > query.limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null,
      };
    },

    /** Its state, progress and summary, and a page of its results (those stored so far), with an outcome filter. */
    async get(orgId: string, id: string, query: { outcome?: ExperimentOutcome; limit: number; cursor?: string }) {
      const row = await experimentOf(orgId, id);
      const [summary, rows] = await Promise.all([
        experimentsRepo.summary(db, id),
        experimentsRepo.results(db, id, { ...query, afterPosition: decodeNumberCursor('position', query.cursor) }),
      ]);
      const page = rows.slice(0, query.limit);
      return {
        experiment: toExperiment(row),
        summary,
        results: page.map((result) => ({
          actionId: result.actionId,
          eventType: result.eventType,
          externalId: result.externalId,
          // A stored result has all of these (state done).
          outcome: result.outcome!,
          baseline: result.baseline as unknown as RunRecord,
          candidate: result.candidate as unknown as RunRecord,
          differences: (result.differences ?? []) as Difference[],
          finishedAt: result.finishedAt,
        })),
        nextCursor: rows.length > query.limit ? encodeNumberCursor('position', page.at(-1)!.position) : null,
      };
    },

    /** Stops it: no more replays start, running ones stop, their results are not stored. */
    async cancel(orgId: string, id: string) {
      if (!(await experimentsRepo.end(db, orgId, id, 'cancelled'))) {
        const row = await experimentOf(orgId, id);
        throw new AppError('conflict', `The experiment has ended already (${row.state})`);
      }
      await deps.bus.publish(BUS_TOPICS.experimentEnded, id);
      return toExperiment(await experimentOf(orgId, id));
    },
  };
}

export type ExperimentsService = ReturnType<typeof createExperimentsService>;
