/** This thread's CPU time so far, in ms; the whole process's where Node has no per-thread figure (before 23.9). */
const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage ? process.threadCpuUsage() : process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * Whether this process's main thread has been busy: the share of the time it spent on the CPU since
 * the last measure, measured again when asked at least `windowMs` after it. The first measure starts
 * at the first question, not with the process (whose start keeps it busy).
 *
 * Time on the CPU, not the event loop's utilization: a loop counts as used from the moment a callback
 * starts until it waits again, so a process kept off the CPU by others (a worker at its lower
 * priority on a machine busy serving) reads as fully used while it runs a third of the time. Such a
 * process is not what holds its work up, and handing its work to the other processes of that machine
 * only adds their wake-ups to the load (docs/benchmarks.md, the fiftieth session). For the same
 * reason a process under a CPU quota of less than a core, whose thread never reaches the share, is
 * not measured against its quota instead: that made its work slower (the fifty-first session).
 */
export function createMainThreadLoad(options: {
  windowMs: number;
  busyShare: number;
  /** The readings, in ms (tests give their own): the wall clock's, and the thread's time on the CPU. */
  now?: () => number;
  cpuMs?: () => number;
}) {
  const { now: clock = () => performance.now(), cpuMs = threadCpuMs } = options;
  let markedAt: number | undefined;
  let markedCpu = 0;
  let busy = false;
  return {
    busy(): boolean {
      const now = clock();
      if (markedAt === undefined || now - markedAt >= options.windowMs) {
        const cpu = cpuMs();
        busy = markedAt === undefined ? false : (cpu - markedCpu) / (now - markedAt) > options.busyShare;
        markedAt = now;
        markedCpu = cpu;
      }
      return busy;
    },
  };
}
