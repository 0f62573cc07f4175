import { type EventLoopUtilization, performance } from 'node:perf_hooks';

/**
 * Whether this process's event loop has been busy: the share of the time it spent running rather
 * than waiting since the last measure, measured again when asked at least `windowMs` after it. The
 * first measure starts at the first question, not with the process (whose start keeps it busy).
 */
export function createEventLoopLoad(options: { windowMs: number; busyShare: number }) {
  let mark: EventLoopUtilization | undefined;
  let markedAt = 0;
  let busy = false;
  return {
    busy(): boolean {
      const now = performance.now();
      if (!mark || now - markedAt >= options.windowMs) {
        const current = performance.eventLoopUtilization();
        busy = mark ? performance.eventLoopUtilization(current, mark).utilization > options.busyShare : false;
        mark = current;
        markedAt = now;
      }
      return busy;
    },
  };
}
