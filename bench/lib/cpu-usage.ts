import { readdirSync, readFileSync } from 'node:fs';

/** Cumulative CPU seconds, read from /proc (Linux). */
export interface CpuSnapshot {
  server: number;
  /** The server's main thread alone (JavaScript, the collector's pauses); the rest is V8's and libuv's helper threads. */
  serverMainThread: number;
  postgres: number;
  machineBusy: number;
  machineTotal: number;
}

/** Where a load's CPU went: per request, in microseconds, and the share of the machine left idle. */
export interface CpuPerRequest {
  serverUs: number;
  serverMainThreadUs: number;
  postgresUs: number;
  idlePercent: number;
}

// /proc counts in clock ticks of USER_HZ, which Linux fixes at 100 per second for user space.
const TICK_SECONDS = 0.01;

/**
 * utime + stime of a process (all its threads) or of one of its threads, and cutime + cstime (its
 * children that exited and were waited for), or undefined once it is gone.
 */
function processSeconds(pid: string, thread?: string): { command: string; seconds: number; exitedChildren: number } | undefined {
  try {
    const stat = readFileSync(thread ? `/proc/${pid}/task/${thread}/stat` : `/proc/${pid}/stat`, 'utf8');
    const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      command,
      seconds: (Number(fields[11]) + Number(fields[12])) * TICK_SECONDS,
      exitedChildren: (Number(fields[13]) + Number(fields[14])) * TICK_SECONDS,
    };
  } catch {
    return undefined;
  }
}

/** The CPU seconds so far of these processes together (those gone count 0). */
export function processesCpuSeconds(pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (processSeconds(String(pid))?.seconds ?? 0), 0);
}

/**
 * The CPU time so far of the benchmarked server, of every PostgreSQL process on the machine, and of
 * the machine; undefined where there is no /proc.
 */
export function cpuSnapshot(serverPid: number): CpuSnapshot | undefined {
  let machine: number[];
  try {
    machine = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return undefined;
  }
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = machine;
  let postgres = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const usage = processSeconds(pid);
    // A backend that exits (a closed connection) takes its CPU time with it, into the postmaster's
    // cutime/cstime: counted there, the sum only grows (without it, a window could come out negative).
    if (usage?.command === 'postgres') postgres += usage.seconds + usage.exitedChildren;
  }
  return {
    server: processSeconds(String(serverPid))?.seconds ?? 0,
    // The main thread's id is the process's.
    serverMainThread: processSeconds(String(serverPid), String(serverPid))?.seconds ?? 0,
    postgres,
    machineBusy: (user + nice + system + irq + softirq + steal) * TICK_SECONDS,
    machineTotal: (user + nice + system + idle + iowait + irq + softirq + steal) * TICK_SECONDS,
  };
}

export function cpuPerRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): CpuPerRequest {
  const perRequest = (seconds: number) => Math.round((seconds * 1e6) / requests);
  const total = after.machineTotal - before.machineTotal;
  return {
    serverUs: perRequest(after.server - before.server),
    serverMainThreadUs: perRequest(after.serverMainThread - before.serverMainThread),
    postgresUs: perRequest(after.postgres - before.postgres),
    idlePercent: Math.round(100 * (1 - (after.machineBusy - before.machineBusy) / total)),
  };
}
