/** A time limit on one piece of work: its signal aborts when the time is up; `clear` once the work is done. */
export interface Deadline {
  /** Aborted with a `TimeoutError` DOMException (as AbortSignal.timeout's) when the time is up. */
  readonly signal: AbortSignal;
  /** Whether the time ran out (and not something else aborted the work). */
  readonly expired: boolean;
  /** The work is done: the timer goes. */
  clear(): void;
}

/**
 * A time limit of `ms` for one call, cleared when the call ends. AbortSignal.timeout's timer is never
 * cleared: it fires when its time comes (unless its signal was collected first), long after the call
 * ended, and wakes the process for it. With several calls per action or email, those wake-ups were a
 * share of an idle-between-bursts process's CPU (docs/benchmarks.md).
 */
export function deadline(ms: number): Deadline {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  // As AbortSignal.timeout's: a pending call's limit does not keep the process alive by itself.
  timer.unref();
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    clear: () => clearTimeout(timer),
  };
}
