/**
 * Takes work into up to `concurrency` slots: as many items as there are free slots, in one `take`,
 * when woken (new work committed; a slot freed while the last take came back full) or at its poll
 * (none without `pollMs`: then whoever wakes it polls for it).
 * A wake-up during a take makes it take once more after. With `gatherMs`, a wake-up takes that long
 * after it came, together with whatever else was committed meanwhile: work that comes at a low rate is
 * then taken and run together, sharing the database's commits and the process's wake-ups, for that
 * much more latency. The job queues' pumps and the action run dispatcher share it; what a take and a
 * run are is theirs. It takes nothing before `start` nor after `stop`, and may be started again.
 */
export function createSlotPump<T>(deps: {
  concurrency: number;
  /** How often it takes unwoken (work nobody signalled: a retry come due, a lost wake-up); never without it. */
  pollMs?: number;
  /** How long a wake-up waits, gathering others, before it takes (0 or none: it takes at once). */
  gatherMs?: number;
  /** At most `free` items, now claimed for this process. */
  take: (free: number) => Promise<T[]>;
  run: (item: T) => Promise<void>;
  onTakeError: (error: unknown) => void;
}) {
  const running = new Set<T>();
  let taking: Promise<void> | undefined;
  let wokenWhileTaking = false;
  // Work may be waiting that no take took: the last take came back full, or a wake-up came while
  // every slot was busy. A freed slot then takes at once rather than at the poll.
  let behind = false;
  let started = false;
  let idle: (() => void) | undefined;
  let gathering: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;

  function pump(): void {
    if (!started) return;
    if (taking) {
      wokenWhileTaking = true;
      return;
    }
    const free = deps.concurrency - running.size;
    if (free <= 0) {
      behind = true;
      return;
    }
    wokenWhileTaking = false;
    taking = takeAndRun(free).finally(() => {
      taking = undefined;
      if (wokenWhileTaking) pump();
    });
  }

  async function takeAndRun(free: number): Promise<void> {
    try {
      const items = await deps.take(free);
      behind = items.length === free;
      for (const item of items) start(item);
    } catch (error) {
      deps.onTakeError(error);
    }
  }

  function start(item: T): void {
    running.add(item);
    deps
      .run(item)
      .catch(() => {}) // run settles its own outcome; a rejection here must not go unhandled
      .finally(() => {
        running.delete(item);
        if (running.size === 0) idle?.();
        if (behind) pump();
      });
  }

  /** True when it takes the work now: it is started, has a free slot, and its last take did not come back full. */
  function wake(): boolean {
    const takes = started && !behind && running.size < deps.concurrency;
    if (!deps.gatherMs) pump();
    else if (started && !gathering) {
      gathering = setTimeout(() => {
        gathering = undefined;
        pump();
      }, deps.gatherMs);
      gathering.unref();
    }
    return takes;
  }

  return {
    /** Takes now, then on every wake-up and poll. */
    start(): void {
      if (started) return;
      started = true;
      if (deps.pollMs) {
        timer = setInterval(pump, deps.pollMs);
        timer.unref();
      }
      pump();
    },

    /** Take now (after `gatherMs`): work was committed. Says whether this process takes it (ProcessBus.subscribe). */
    wake,

    /** Takes nothing more; waits up to `timeoutMs` for the running items; returns those still running. */
    async stop(timeoutMs: number): Promise<T[]> {
      started = false;
      clearInterval(timer);
      clearTimeout(gathering);
      gathering = undefined;
      await taking; // what it takes runs, and is waited for with the rest
      if (running.size > 0) {
        await new Promise<void>((resolve) => {
          idle = resolve;
          setTimeout(resolve, timeoutMs).unref();
        });
      }
      return [...running];
    },
  };
}
