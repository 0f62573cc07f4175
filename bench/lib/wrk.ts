import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LoadResult } from './harness.ts';

export interface PreparedRequest {
  method: 'POST' | 'GET';
  path: string;
  headers: Record<string, string>;
  body: string;
}

const SCRIPT = join(import.meta.dirname, 'wrk-requests.lua');
const THREADS = 2;

/**
 * Drives a load with wrk (Debian package `wrk`), whose C client costs a fraction of autocannon's
 * JavaScript per request: on a 2-core machine the load generator shares the cores with the server
 * under test, as pgbench's client does with PostgreSQL. Every request is built (and signed) before
 * the run by the caller, and each is sent once; `requests` must outnumber what the run can send.
 */
export async function wrkLoad(url: string, requests: PreparedRequest[], options: { connections: number; duration: number }): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ap-wrk-'));
  try {
    const file = join(dir, 'requests.tsv');
    writeFileSync(file, requests.map(({ method, path, headers, body }) => {
      const raw = Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\r');
      if (/[\t\r\n]/.test(path + body + Object.values(headers).join(''))) throw new Error('a request holds a tab or line break');
      return `${method}\t${path}\t${raw}\t${body}`;
    }).join('\n') + '\n');
    const { stdout } = await promisify(execFile)('wrk', [
      `-t${THREADS}`, `-c${options.connections}`, `-d${options.duration}s`, '--timeout', '10s', '-s', SCRIPT, url, '--', file, String(THREADS),
    ], { maxBuffer: 1024 * 1024 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw new Error('bench:ingest drives its load with wrk: install it (Debian: apt-get install wrk)');
      throw error;
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { requests: number; durationUs: number; non2xx: number; errors: number; p50Us: number; p99Us: number };
    return {
      requestsPerSecond: result.requests / (result.durationUs / 1e6),
      p50: Math.round(result.p50Us / 100) / 10,
      p99: Math.round(result.p99Us / 100) / 10,
      non2xx: result.non2xx,
      errors: result.errors,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
