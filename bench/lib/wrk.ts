import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cpuPerRequest, cpuSnapshot, type CpuPerRequest } from './cpu-usage.ts';
import type { LoadResult } from './harness.ts';

export interface PreparedRequest {
  method: 'POST' | 'GET';
  path: string;
  headers: Record<string, string>;
  body: string;
}

const SCRIPT = join(import.meta.dirname, 'wrk-requests.lua');
const THREADS = 2;

/** One request as the bytes wrk sends, prefixed by their length (the record wrk-requests.lua reads). */
function record(host: string, { method, path, headers, body }: PreparedRequest): Buffer {
  const head = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${host}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  if (/[\r\n]/.test(head.join(''))) throw new Error('a request line or header holds a line break');
  const raw = Buffer.from(`${head.join('\r\n')}\r\n\r\n${body}`);
  return Buffer.concat([Buffer.from(`${raw.length}\n`), raw]);
}

/**
 * Drives a load with wrk (Debian package `wrk`), whose C client costs a fraction of autocannon's
 * JavaScript per request: on a 2-core machine the load generator shares the cores with the server
 * under test, as pgbench's client does with PostgreSQL. Every request is built (and signed) before
 * the run by the caller, and each is sent once; `requests` must outnumber what the run can send.
 * With `cpuOf`, the result also says how much CPU the server and PostgreSQL spent per request.
 */
export async function wrkLoad(
  url: string,
  requests: PreparedRequest[],
  options: { connections: number; duration: number; cpuOf?: number },
): Promise<LoadResult & { cpu?: CpuPerRequest }> {
  const dir = mkdtempSync(join(tmpdir(), 'ap-wrk-'));
  try {
    const file = join(dir, 'requests');
    const { host } = new URL(url);
    // Round-robin over the threads, so that each thread's share keeps the caller's spread (fewer
    // requests than threads, as for a baseline that repeats one: each thread sends them all).
    for (let thread = 0; thread < THREADS; thread++) {
      const share = requests.length < THREADS ? requests : requests.filter((_, index) => index % THREADS === thread);
      writeFileSync(`${file}.${thread}`, Buffer.concat(share.map((request) => record(host, request))));
    }
    const before = options.cpuOf === undefined ? undefined : cpuSnapshot(options.cpuOf);
    const { stdout } = await promisify(execFile)(
      'wrk',
      [`-t${THREADS}`, `-c${options.connections}`, `-d${options.duration}s`, '--timeout', '10s', '-s', SCRIPT, url, '--', file],
      { maxBuffer: 1024 * 1024 },
    ).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT')
        throw new Error('this benchmark drives its load with wrk: install it (Debian: apt-get install wrk)');
      throw error;
    });
    const after = before && cpuSnapshot(options.cpuOf!);
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      requests: number;
      durationUs: number;
      non2xx: number;
      errors: number;
      p50Us: number;
      p99Us: number;
    };
    return {
      requestsPerSecond: result.requests / (result.durationUs / 1e6),
      p50: Math.round(result.p50Us / 100) / 10,
      p99: Math.round(result.p99Us / 100) / 10,
      non2xx: result.non2xx,
      errors: result.errors,
      ...(before && after && { cpu: cpuPerRequest(before, after, result.requests) }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
