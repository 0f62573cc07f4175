import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { createSlotPump } from '../../lib/slot-pump.ts';
import type { ActionRunner, ClaimedContext } from './action-runner.ts';
import { claimRunnable } from './lifecycle.ts';

/**
 * Runs actions in this process, up to `concurrency` at once, claiming them straight from the actions
 * table (claimRunnable): as many as it has free slots for, in one statement (lib/slot-pump.ts), when
 * woken (a runnable action was committed, in this process or, by the bus, another) or at its poll.
 * A run whose process dies leaves a lapsing lease, and the next claim after it lapses takes the
 * action over; a stopping process gives its leases up at once.
 */
export function createRunDispatcher(deps: {
  db: Kysely<DB>;
  runner: Pick<ActionRunner, 'contexts' | 'runClaimed' | 'stop'>;
  concurrency: number;
  leaseMs: number;
  /** How often an idle dispatcher looks for work nobody woke it for (a lapsed lease, a lost wake-up). */
  pollMs: number;
  metrics: Pick<Metrics, 'jobs' | 'jobDuration'>;
  logger: Logger;
}) {
  async function run(context: ClaimedContext): Promise<void> {
    const begun = performance.now();
    try {
      await deps.runner.runClaimed(context);
      deps.metrics.jobs.inc({ queue: 'actions.run', outcome: 'completed' });
    } catch (error) {
      // The database failed the run's last write: its lease lapses and a later claim resumes it.
      deps.metrics.jobs.inc({ queue: 'actions.run', outcome: 'failed' });
      deps.logger.warn({ err: error, actionId: context.id }, 'action run stopped; it resumes once its lease lapses');
    } finally {
      deps.metrics.jobDuration.observe({ queue: 'actions.run' }, (performance.now() - begun) / 1000);
    }
  }

  const slots = createSlotPump({
    concurrency: deps.concurrency,
    pollMs: deps.pollMs,
    // Claimed but not started when the context read fails: their leases lapse and a later claim takes them.
    take: async (free) => [...(await deps.runner.contexts(await claimRunnable(deps.db, free, deps.leaseMs))).values()],
    run,
    onTakeError: (error) => deps.logger.error({ err: error }, 'could not claim actions to run'),
  });

  return {
    /** Claim now: runnable actions were committed (called for this process's and, by the bus, other processes' commits). */
    wake: slots.wake,
    start: slots.start,

    /** Claims nothing more; runs hand their actions over at their next safe point; waits up to `timeoutMs` for them. */
    async stop(timeoutMs: number): Promise<void> {
      deps.runner.stop();
      await slots.stop(timeoutMs);
    },
  };
}

export type RunDispatcher = ReturnType<typeof createRunDispatcher>;
