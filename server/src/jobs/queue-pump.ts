import type { Logger } from 'pino';
import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { createSlotPump } from '../lib/slot-pump.ts';

/** A job as the pump fetches it (with pg-boss's metadata: `retryLimit` is the job's own, see `handBack`). */
export type FetchedJob = Pick<JobWithMetadata, 'id' | 'data' | 'retryCount' | 'retryLimit' | 'expireInSeconds'>;

/** What a running job's attempt is handed besides the job (and its handler, in JobMeta). */
export interface JobClaim {
  /**
   * Registers what to undo if this process stops before the job finishes and hands it back to be
   * retried (a lease the job holds, so that its retry is not kept waiting): run, and awaited, before
   * the job is handed back.
   */
  onHandBack(release: () => Promise<void>): void;
  /**
   * Aborted when this attempt no longer has the job: it ran past its expiry (pg-boss's monitor fails it
   * to its retry at its next pass), or a heartbeat found it failed elsewhere. Its retry runs it, or will.
   * Work with effects outside the database stops at it.
   */
  signal: AbortSignal;
}

/** What a job handed back by a stopping process (or failed by it: its claim was gone) says of its attempt. */
const STOPPED = 'the worker stopped before the job finished';

/** How long a job's handler has to stop once its signal is aborted (past its expiry, or its claim lost). */
const ABANDON_AFTER_MS = 10_000;

/**
 * Works one queue in this process with up to `concurrency` jobs at once, on pg-boss's fetch,
 * complete and fail (so retries, backoff and expiry stay pg-boss's).
 *
 * pg-boss's own workers fetch one job each and fetch again after every job, so each job cost two
 * fetches, and N workers racing over one queue's index cost more. The pump instead fetches as many
 * jobs as it has free slots, in one statement (lib/slot-pump.ts), and completes finished jobs together.
 * It fetches when woken: by a wake-up for its queue, or by the job runner's poll finding jobs due.
 *
 * Its running jobs' heartbeats are one `touch` every half `heartbeatSeconds`: the jobs are sent with
 * that heartbeat, and pg-boss's monitor fails (to their retry) those whose heartbeat stopped, a
 * process that died, long before their expiry. The touch is fenced to the attempts fetched, so a job
 * it did not refresh is no longer this attempt's: its signal is aborted. So is a job's that runs past
 * its expiry (`expireInSeconds` from its fetch), when pg-boss's monitor may fail it to its retry.
 */
export function createQueuePump(deps: {
  boss: Pick<PgBoss, 'fetch' | 'complete' | 'fail' | 'touch' | 'getDb'>;
  /** pg-boss's schema, quoted. */
  schema: string;
  name: string;
  concurrency: number;
  /** The heartbeat the queue's jobs are sent with (pg-boss's `heartbeatSeconds`). */
  heartbeatSeconds: number;
  run: (job: FetchedJob, claim: JobClaim) => Promise<void>;
  /** After a heartbeat, with the running jobs it found still this process's (leases they hold are renewed). */
  onHeartbeat?: (jobs: FetchedJob[]) => Promise<void>;
  /** How long a job's handler has to stop once its signal is aborted, before its slot is freed without it. */
  abandonAfterMs?: number;
  /** A job given up (its handler did not stop within `abandonAfterMs`): failed to its retry now, whatever its handler does. */
  onAbandon?: (job: FetchedJob) => void;
  /** A job handed back at the stop (its handler, still running, is no longer watched). */
  onHandedBack?: (job: FetchedJob) => void;
  logger: Logger;
}) {
  const abandonAfterMs = deps.abandonAfterMs ?? ABANDON_AFTER_MS;
  const { boss, name } = deps;
  const toComplete: FetchedJob[] = [];
  let completing: Promise<void> = Promise.resolve();
  const releases = new Map<FetchedJob, Array<() => Promise<void>>>();
  const claims = new Map<FetchedJob, AbortController>();

  async function run(job: FetchedJob): Promise<void> {
    const claim = new AbortController();
    claims.set(job, claim);
    // At its expiry, not a heartbeat later: its retry may start at the monitor's next pass from then on.
    const expiry = setTimeout(() => claim.abort(new Error(`job ${job.id} ran past its expiry`)), job.expireInSeconds * 1000);
    expiry.unref();
    let abandon: NodeJS.Timeout | undefined;
    try {
      const onHandBack = (release: () => Promise<void>) => releases.set(job, [...(releases.get(job) ?? []), release]);
      // A handler that does not stop at its signal must not keep its slot for ever: it is left running,
      // its job failed to its retry (fenced to this attempt), and its slot taken by the next job, as
      // pg-boss's own workers do at a job's expiry. What it holds (a lease) lapses as a dead process's does.
      const abandoned = new Promise<never>((_, reject) =>
        claim.signal.addEventListener('abort', () => {
          abandon = setTimeout(() => {
            const reason = claim.signal.reason instanceof Error ? claim.signal.reason.message : String(claim.signal.reason);
            deps.logger.error(
              { queue: name, jobId: job.id },
              "a job's handler did not stop at its signal: its slot is freed and its retry runs it",
            );
            deps.onAbandon?.(job);
            reject(new Error(`${reason}, and its handler did not stop within ${abandonAfterMs} ms`));
          }, abandonAfterMs);
          abandon.unref();
        }),
      );
      await Promise.race([deps.run(job, { onHandBack, signal: claim.signal }), abandoned]);
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
      clearTimeout(expiry);
      clearTimeout(abandon);
      releases.delete(job);
      claims.delete(job);
    }
  }

  /**
   * Hands jobs this process stopped before they finished back to run again now, on any worker, without
   * spending one of their retries: a stop is not the job's failure. pg-boss's `fail` would spend one (at
   * the last, the job died unrun) and wait its retry delay; its `restore` keeps the attempt's number, so
   * this attempt's late end would settle the next attempt. Here the next fetch counts a new attempt (the
   * fence of pg-boss's `complete`, `fail` and `touch` moves on), and the job is allowed one more.
   */
  async function handBack(jobs: FetchedJob[]): Promise<void> {
    await boss.getDb().executeSql(
      `update ${deps.schema}.job
          set state = 'retry', retry_limit = retry_limit + 1, start_after = ${deps.schema}.job_now(), output = $3::jsonb
        where name = $1 and state = 'active' and (id::text || ':' || retry_count::text) = any($2::text[])`,
      [name, jobs.map((job) => `${job.id}:${job.retryCount}`), JSON.stringify({ message: STOPPED })],
    );
  }

  async function heartbeat(): Promise<void> {
    const held = [...claims].flatMap(([job, claim]) => (claim.signal.aborted ? [] : [job]));
    if (held.length === 0) return;
    let refreshed: Set<string>;
    try {
      // The ids it refreshed (pg-boss's types leave them out); without them it can tell nothing: none is given up.
      const touched: { settled?: string[] } = await boss.touch(
        name,
        held.map(({ id, retryCount }) => ({ id, retryCount })),
      );
      refreshed = new Set(touched.settled ?? held.map((job) => job.id));
    } catch (error) {
      // Says nothing of the claims: none is given up.
      deps.logger.warn({ err: error, queue: name }, "could not send the running jobs' heartbeat");
      return;
    }
    await deps
      .onHeartbeat?.(held.filter((job) => refreshed.has(job.id)))
      .catch((error: unknown) => deps.logger.warn({ err: error, queue: name }, 'could not renew what running jobs hold'));
    for (const job of held) {
      const claim = claims.get(job); // gone: the job ended meanwhile
      if (refreshed.has(job.id) || !claim) continue;
      deps.logger.warn(
        { queue: name, jobId: job.id },
        "a running job's claim is gone (expired, or failed elsewhere): its retry runs it",
      );
      claim.abort(new Error(`job ${job.id} is no longer this attempt's to run`));
    }
  }
  const heartbeats = setInterval(heartbeat, (deps.heartbeatSeconds * 1000) / 2);
  heartbeats.unref();

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
    take: async (free) => (await boss.fetch(name, { batchSize: free, includeMetadata: true })) as FetchedJob[],
    run,
    onTakeError: (error) => deps.logger.error({ err: error, queue: name }, 'job fetch failed'),
  });
  slots.start();

  return {
    /** Fetch now (jobs were enqueued). */
    wake: slots.wake,

    /**
     * Stops fetching; waits up to `timeoutMs` for running jobs, then hands the rest back (`handBack`);
     * one whose claim is gone (past its expiry, failed elsewhere) is failed to its retry, as at its end.
     * Says how many were handed back.
     */
    async stop(timeoutMs: number): Promise<number> {
      const unfinished = await slots.stop(timeoutMs);
      // From now on a heartbeat would find the jobs handed back no longer this attempt's.
      clearInterval(heartbeats);
      const held = unfinished.filter((job) => claims.get(job)?.signal.aborted === false);
      const lost = unfinished.filter((job) => !held.includes(job));
      if (unfinished.length > 0) {
        // Before the hand-back: the next attempt, starting first, would find the job's lease still held.
        const undo = unfinished.flatMap((job) => releases.get(job) ?? []);
        for (const outcome of await Promise.allSettled(undo.map((release) => release())))
          if (outcome.status === 'rejected')
            deps.logger.warn({ err: outcome.reason, queue: name }, 'could not release what a handed-back job held');
        if (held.length > 0)
          await handBack(held).then(
            () => {
              for (const job of held) deps.onHandedBack?.(job);
            },
            // Not handed back: pg-boss's monitor fails them to their retry once their heartbeat is stale, as a dead process's.
            (error: unknown) =>
              deps.logger.warn({ err: error, queue: name, count: held.length }, 'could not hand running jobs back'),
          );
        if (lost.length > 0) await boss.fail(name, lost, { message: STOPPED }).catch(() => {});
      }
      flushCompletions();
      await completing;
      return held.length;
    },
  };
}

export type QueuePump = ReturnType<typeof createQueuePump>;
