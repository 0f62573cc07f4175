import type { Logger } from 'pino';
import type { Job, PgBoss } from 'pg-boss';

export type FetchedJob = Pick<Job, 'id' | 'data' | 'retryCount'>;

/**
 * Works one queue in this process with up to `concurrency` jobs at once, on pg-boss's fetch,
 * complete and fail (so retries, backoff and expiry stay pg-boss's).
 *
 * pg-boss's own workers fetch one job each and fetch again after every job, so each job cost two
 * fetches, and N workers racing over one queue's index cost more. The pump instead fetches as many
 * jobs as it has free slots, in one statement, when woken (a job enqueued by this process, a slot
 * freed while the last fetch came back full) or at its poll; and completes finished jobs together.
 */
export function createQueuePump(deps: {
  boss: Pick<PgBoss, 'fetch' | 'complete' | 'fail'>;
  name: string;
  concurrency: number;
  pollMs: number;
  run: (job: FetchedJob) => Promise<void>;
  logger: Logger;
}) {
  const { boss, name, concurrency } = deps;
  const running = new Map<string, FetchedJob>();
  let fetching: Promise<void> | undefined;
  let wokenWhileFetching = false;
  // Jobs may be waiting that no fetch has taken: the last fetch came back full, or a wake-up came
  // while every slot was busy. A freed slot then fetches at once rather than at the poll.
  let behind = false;
  let stopped = false;
  let idle: (() => void) | undefined;
  const toComplete: FetchedJob[] = [];
  let completing: Promise<void> = Promise.resolve();

  function pump(): void {
    if (stopped) return;
    if (fetching) {
      wokenWhileFetching = true;
      return;
    }
    const free = concurrency - running.size;
    if (free <= 0) {
      behind = true;
      return;
    }
    wokenWhileFetching = false;
    fetching = fetchAndStart(free).finally(() => {
      fetching = undefined;
      if (wokenWhileFetching) pump();
    });
  }

  async function fetchAndStart(free: number): Promise<void> {
    try {
      const jobs = (await boss.fetch(name, { batchSize: free })) as FetchedJob[];
      behind = jobs.length === free;
      for (const job of jobs) start(job);
    } catch (error) {
      deps.logger.error({ err: error, queue: name }, 'job fetch failed');
    }
  }

  function start(job: FetchedJob): void {
    running.set(job.id, job);
    deps
      .run(job)
      .then(
        () => {
          toComplete.push(job);
          if (toComplete.length === 1) setImmediate(flushCompletions);
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          // Settled in turn with the completions, so that stopping waits for it too.
          completing = completing.then(() =>
            boss.fail(name, job, { message }).then(
              () => {},
              (failure: unknown) => deps.logger.error({ err: failure, queue: name, jobId: job.id }, 'could not record a job failure'),
            ),
          );
        },
      )
      .finally(() => {
        running.delete(job.id);
        if (running.size === 0) idle?.();
        if (behind) pump();
      });
  }

  function flushCompletions(): void {
    const jobs = toComplete.splice(0);
    if (jobs.length === 0) return;
    completing = completing.then(() =>
      boss.complete(name, jobs).then(
        () => {},
        (error: unknown) => deps.logger.error({ err: error, queue: name, count: jobs.length }, 'could not record job completions'),
      ),
    );
  }

  const timer = setInterval(pump, deps.pollMs);
  timer.unref();
  pump();

  return {
    /** Fetch now (jobs were enqueued by this process). */
    wake: pump,

    /** Stops fetching; waits up to `timeoutMs` for running jobs, then hands the rest back to be retried. */
    async stop(timeoutMs: number): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await fetching; // what it fetches runs, or is handed back below
      if (running.size > 0) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          setTimeout(resolve, timeoutMs).unref();
        });
      }
      const unfinished = [...running.values()];
      if (unfinished.length > 0)
        await boss.fail(name, unfinished, { message: 'the worker stopped before the job finished' }).catch(() => {});
      flushCompletions();
      await completing;
    },
  };
}

export type QueuePump = ReturnType<typeof createQueuePump>;
