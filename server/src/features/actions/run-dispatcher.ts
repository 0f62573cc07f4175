import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { ActionRunner } from './action-runner.ts';
import { claimRunnable } from './lifecycle.ts';
import type { RunContext } from './run-context.ts';

/**
 * Runs actions in this process, up to `concurrency` at once, claiming them straight from the actions
 * table (claimRunnable): as many as it has free slots for, in one statement, when woken (a runnable
 * action was committed, in this process or, by the bus, another; a slot freed while the last claim
 * came back full) or at its poll. A run whose process dies leaves a lapsing lease, and the next claim
 * after it lapses takes the action over; a stopping process gives its leases up at once.
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
  const running = new Set<string>();
  let claiming: Promise<void> | undefined;
  let wokenWhileClaiming = false;
  // Runnable actions may be waiting that no claim took: the last claim came back full, or a wake-up
  // came while every slot was busy. A freed slot then claims at once rather than at the poll.
  let behind = false;
  let started = false;
  let poll: NodeJS.Timeout | undefined;
  let idle: (() => void) | undefined;

  function pump(): void {
    if (!started) return;
    if (claiming) {
      wokenWhileClaiming = true;
      return;
    }
    const free = deps.concurrency - running.size;
    if (free <= 0) {
      behind = true;
      return;
    }
    wokenWhileClaiming = false;
    claiming = claimAndRun(free).finally(() => {
      claiming = undefined;
      if (wokenWhileClaiming) pump();
    });
  }

  async function claimAndRun(free: number): Promise<void> {
    try {
      const claimed = await claimRunnable(deps.db, free, deps.leaseMs);
      behind = claimed.length === free;
      // Claimed and not started (the read failed): their leases lapse and a later claim takes them.
      const contexts = await deps.runner.contexts(claimed);
      for (const context of contexts.values()) run(context);
    } catch (error) {
      deps.logger.error({ err: error }, 'could not claim actions to run');
    }
  }

  function run(context: RunContext): void {
    const actionId = context.id;
    running.add(actionId);
    const begun = performance.now();
    deps.runner
      .runClaimed(context)
      .then(
        () => deps.metrics.jobs.inc({ queue: 'actions.run', outcome: 'completed' }),
        (error: unknown) => {
          // The database failed the run's last write: its lease lapses and a later claim resumes it.
          deps.metrics.jobs.inc({ queue: 'actions.run', outcome: 'failed' });
          deps.logger.warn({ err: error, actionId }, 'action run stopped; it resumes once its lease lapses');
        },
      )
      .finally(() => {
        deps.metrics.jobDuration.observe({ queue: 'actions.run' }, (performance.now() - begun) / 1000);
        running.delete(actionId);
        if (running.size === 0) idle?.();
        if (behind) pump();
      });
  }

  return {
    /** Claim now: runnable actions were committed (called for this process's and, by the bus, other processes' commits). */
    wake: pump,

    start(): void {
      if (started) return;
      started = true;
      poll = setInterval(pump, deps.pollMs);
      poll.unref();
      pump();
    },

    /** Claims nothing more; runs hand their actions over at their next safe point; waits up to `timeoutMs` for them. */
    async stop(timeoutMs: number): Promise<void> {
      if (!started) return;
      started = false;
      clearInterval(poll);
      deps.runner.stop();
      await claiming; // what it claims is started, and handed over with the rest
      if (running.size > 0) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          setTimeout(resolve, timeoutMs).unref();
        });
      }
    },
  };
}

export type RunDispatcher = ReturnType<typeof createRunDispatcher>;
