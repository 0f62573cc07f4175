import { fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { ownChild } from './harness.ts';

/**
 * The MCP benchmark's server (lib/mcp-echo-process.ts: the official server SDK's, one `echo` tool) in
 * a process of its own, so that its answers do not wait for the benchmark's client and model, and its
 * CPU is counted apart.
 */
export async function forkEchoMcpServer(options: { idempotent?: boolean } = {}) {
  const child = ownChild(
    fork(join(import.meta.dirname, 'mcp-echo-process.ts'), {
      env: { ...process.env, BENCH_MCP_IDEMPOTENT: options.idempotent ? '1' : '0' },
    }),
  );
  const [{ url }] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the MCP server's process exited (${code}) before it listened`);
    }),
  ])) as [{ url: string }];
  return {
    url,
    pid: child.pid!,
    /** The tool calls it answered and the sessions it holds, so far. */
    async counts(): Promise<{ calls: number; sessions: number }> {
      const answer = once(child, 'message') as Promise<[{ calls: number; sessions: number }]>;
      child.send({ report: true });
      return (await answer)[0];
    },
    async close(): Promise<void> {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
