import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { actionsRepo } from './actions.repo.ts';
import type { Clock } from '../../lib/clock.ts';

/** Runs whose process died, found and given to a live worker: by their action's lease, or by their job. */
export function createRunRecovery(deps: {
  db: Kysely<DB>;
  jobs: Pick<JobRunner, 'enqueue' | 'activeLongerThan' | 'handBack'>;
  leaseMs: number;
  clock: Clock;
}) {
  return {
    /**
     * Hands back the run jobs that a process fetched over half a lease ago and whose action no live
     * runner holds: that process died before claiming the action (the claim is the first thing a
     * run does), or while running it (the lease lapsed). The queue's retry then runs them at once
     * (or finds the action already done elsewhere), instead of after the job's hour-long expiry; no
     * job of a dead process stays active. Safe to call from every worker: only the attempt that is
     * still active is failed.
     */
    async handBackStalledRuns(): Promise<number> {
      const stalled = await deps.jobs.activeLongerThan('actions.run', deps.leaseMs / 2000);
      if (stalled.length === 0) return 0;
      const actionIdOf = (job: { data: unknown }) => (job.data as { actionId: string }).actionId;
      const held = new Set(await actionsRepo.heldAmong(deps.db, stalled.map(actionIdOf)));
      const abandoned = stalled.filter((job) => !held.has(actionIdOf(job)));
      await deps.jobs.handBack('actions.run', abandoned, 'its worker stopped before the run finished');
      return abandoned.length;
    },

    /** Schedules running actions whose runner died (or, with includeLive, every running one) to resume once their lease lapses. */
    async resumeAbandoned(options: { includeLive: boolean }): Promise<number> {
      const rows = await actionsRepo.running(deps.db, options);
      for (const row of rows) {
        await deps.jobs.enqueue(
          'actions.run',
          { actionId: row.id },
          { startAfter: row.lapsesInMs > 0 ? new Date(deps.clock.now().getTime() + row.lapsesInMs + 50) : undefined },
        );
      }
      return rows.length;
    },
  };
}

export type RunRecovery = ReturnType<typeof createRunRecovery>;
