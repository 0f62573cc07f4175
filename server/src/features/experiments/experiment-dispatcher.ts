import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { createSlotPump } from '../../lib/slot-pump.ts';
import { baselineOf } from './baseline.ts';
import { compareRuns, type RunRecord } from './experiment-record.ts';
import { type ClaimedResult, experimentsRepo } from './experiments.repo.ts';
import { ExperimentBudgetReached, type Replayer } from './replay.ts';

/** Replays of one action cut short (their process died each time) after which its outcome is `failed`. */
export const MAX_REPLAY_ATTEMPTS = 3;
const CUT_SHORT: RunRecord = {
  status: 'failed',
  toolCalls: [],
  approvalsNeeded: 0,
  finalText: null,
  error: `The replay was cut short ${MAX_REPLAY_ATTEMPTS} times (its process died each time); it is not tried again`,
  steps: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: null,
};

/**
 * Runs experiments' replays in this process, up to `concurrency` at once: its own slots, apart from
 * the actions' (live actions never wait for an experiment), claiming pending results from the
 * database under a lease. Any process may run them; a process that dies leaves lapsing leases, and
 * another takes the results over; a stopping one gives its leases up at once.
 */
export function createExperimentDispatcher(deps: {
  db: Kysely<DB>;
  replay: Replayer;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  /** An experiment ended here (a budget stopped it): the other processes stop its replays too. */
  ended: (experimentId: string) => Promise<void>;
  metrics: Pick<Metrics, 'jobs' | 'jobDuration'>;
  logger: Logger;
}) {
  const { db } = deps;
  const running = new Map<ClaimedResult, AbortController>();

  async function settle(claim: ClaimedResult, controller: AbortController): Promise<void> {
    const { record: baseline, calls } = await baselineOf(db, claim.actionId);
    const candidate = claim.attempts > MAX_REPLAY_ATTEMPTS ? CUT_SHORT : await deps.replay(claim, calls, controller.signal);
    const { outcome, differences } = compareRuns(baseline, candidate);
    if (await experimentsRepo.storeResult(db, claim, { outcome, baseline, candidate, differences }))
      await experimentsRepo.completeIfDone(db, claim.experimentId);
  }

  async function run(claim: ClaimedResult): Promise<void> {
    const controller = new AbortController();
    running.set(claim, controller);
    const begun = performance.now();
    const renew = setInterval(
      () => {
        experimentsRepo
          .renewLeases(db, [claim], deps.leaseMs)
          .catch((error) => deps.logger.warn({ err: error, experimentId: claim.experimentId }, 'could not renew a replay lease'));
      },
      Math.max(100, deps.leaseMs / 3),
    );
    renew.unref();
    try {
      await settle(claim, controller);
      deps.metrics.jobs.inc({ queue: 'experiments.replay', outcome: 'completed' });
    } catch (error) {
      if (error instanceof ExperimentBudgetReached) {
        // The experiment stops here, with the budget's reason; its other replays stop too.
        await experimentsRepo.end(db, claim.orgId, claim.experimentId, 'failed', `Stopped by a budget: ${error.message}`);
        abortReplaysOf(new Set([claim.experimentId]));
        await deps.ended(claim.experimentId);
      } else if (controller.signal.aborted) {
        // Its experiment ended, or this process is stopping (then another process takes the result at once).
        await experimentsRepo.release(db, claim);
      } else {
        deps.metrics.jobs.inc({ queue: 'experiments.replay', outcome: 'failed' });
        deps.logger.warn({ err: error, ...claim }, 'replay stopped; it is tried again once its lease lapses');
      }
    } finally {
      clearInterval(renew);
      running.delete(claim);
      deps.metrics.jobDuration.observe({ queue: 'experiments.replay' }, (performance.now() - begun) / 1000);
    }
  }

  function abortReplaysOf(experimentIds: Set<string>): void {
    for (const [claim, controller] of running) if (experimentIds.has(claim.experimentId)) controller.abort();
  }

  const slots = createSlotPump({
    concurrency: deps.concurrency,
    pollMs: deps.pollMs,
    take: (free) => experimentsRepo.claim(db, free, deps.leaseMs),
    run,
    onTakeError: (error) => deps.logger.error({ err: error }, 'could not claim experiment replays'),
  });
  return {
    /** Claim now: results were committed to replay (this process's or, by the bus, another's). */
    wake: slots.wake,
    start: slots.start,

    /** Some experiment ended: the replays of those that are no longer running stop (their results are not stored). */
    async experimentEnded(): Promise<void> {
      const ids = [...new Set([...running.keys()].map((claim) => claim.experimentId))];
      const unfinished = await experimentsRepo.unfinished(db, ids);
      abortReplaysOf(new Set(ids.filter((id) => !unfinished.has(id))));
    },

    /** Claims nothing more; running replays stop and give their results up to another process. */
    async stop(timeoutMs: number): Promise<void> {
      for (const controller of running.values()) controller.abort();
      await slots.stop(timeoutMs);
    },
  };
}

export type ExperimentDispatcher = ReturnType<typeof createExperimentDispatcher>;
