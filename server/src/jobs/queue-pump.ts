import type { Logger } from 'pino';
import type { Job, PgBoss } from 'pg-boss';
import { createSlotPump } from '../lib/slot-pump.ts';

export type FetchedJob = Pick<Job, 'id' | 'data' | 'retryCount'>;

/**
 * Works one queue in this process with up to `concurrency` jobs at once, on pg-boss's fetch,
 * complete and fail (so retries, backoff and expiry stay pg-boss's).
 *
 * pg-boss's own workers fetch one job each and fetch again after every job, so each job cost two
 * fetches, and N workers racing over one queue's index cost more. The pump instead fetches as many
 * jobs as it has free slots, in one statement (lib/slot-pump.ts), and completes finished jobs together.
 * It fetches when woken: by a wake-up for its queue, or by the job runner's poll finding jobs due.
 */
export function createQueuePump(deps: {
  boss: Pick<PgBoss, 'fetch' | 'complete' | 'fail'>;
  name: string;
  concurrency: number;
  /** Runs a job; `onHandBack` registers what to undo if the job is handed back unfinished (JobMeta). */
  run: (job: FetchedJob, onHandBack: (release: () => Promise<void>) => void) => Promise<void>;
  logger: Logger;
}) {
  const { boss, name } = deps;
  const toComplete: FetchedJob[] = [];
  let completing: Promise<void> = Promise.resolve();
  const releases = new Map<FetchedJob, Array<() => Promise<void>>>();

  async function run(job: FetchedJob): Promise<void> {
    try {
      await deps.run(job, (release) => releases.set(job, [...(releases.get(job) ?? []), release]));
      toComplete.push(job);
      if (toComplete.length === 1) setImmediate(flushCompletions);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Settled in turn with the completions, so that stopping waits for it too.
      completing = completing.then(() =>
        boss.fail(name, job, { message }).then(
          () => {},
          (failure: unknown) => deps.logger.error({ err: failure, queue: name, jobId: job.id }, 'could not record a job failure'),
        ),
      );
    } finally {
      releases.delete(job);
    }
  }

  function flushCompletions(): void {
    const jobs = toComplete.splice(0);
    if (jobs.length === 0) return;
    completing = completing.then(() =>
      boss.complete(name, jobs).then(
        () => {},
        (error: unknown) =>
          deps.logger.error({ err: error, queue: name, count: jobs.length }, 'could not record job completions'),
      ),
    );
  }

  const slots = createSlotPump<FetchedJob>({
    concurrency: deps.concurrency,
    // No poll of its own: the job runner polls every queue in one statement and wakes this pump.
    take: async (free) => (await boss.fetch(name, { batchSize: free })) as FetchedJob[],
    run,
    onTakeError: (error) => deps.logger.error({ err: error, queue: name }, 'job fetch failed'),
  });
  slots.start();

  return {
    /** Fetch now (jobs were enqueued). */
    wake: slots.wake,

    /** Stops fetching; waits up to `timeoutMs` for running jobs, then hands the rest back to be retried. */
    async stop(timeoutMs: number): Promise<void> {
      const unfinished = await slots.stop(timeoutMs);
      if (unfinished.length > 0) {
        // Before the hand-back: a retry that started first would find the job's lease still held.
        const undo = unfinished.flatMap((job) => releases.get(job) ?? []);
        for (const outcome of await Promise.allSettled(undo.map((release) => release())))
          if (outcome.status === 'rejected')
            deps.logger.warn({ err: outcome.reason, queue: name }, 'could not release what a handed-back job held');
        await boss.fail(name, unfinished, { message: 'the worker stopped before the job finished' }).catch(() => {});
      }
      flushCompletions();
      await completing;
    },
  };
}

export type QueuePump = ReturnType<typeof createQueuePump>;
