import { chmodSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';

/**
 * Embedded PGlite belongs to one process. While `serve` runs, admin commands from another terminal
 * (`users create`, ...) are carried out by the server itself through this Unix socket in the data
 * directory, readable by the data directory's owner only.
 */
export const adminSocketPath = (dataDir: string) => join(dataDir, 'admin.sock');

interface AdminReply {
  ok: boolean;
  message: string;
}

export async function startAdminSocket(dataDir: string, run: (args: string[]) => Promise<string>): Promise<() => Promise<void>> {
  const path = adminSocketPath(dataDir);
  rmSync(path, { force: true });
  const server = createServer((socket) => {
    let input = '';
    socket.setEncoding('utf8');
    socket.on('data', async (chunk) => {
      input += chunk;
      if (!input.includes('\n')) return;
      let reply: AdminReply;
      try {
        const args = JSON.parse(input.slice(0, input.indexOf('\n'))) as unknown;
        if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) throw new Error('Expected a list of arguments');
        reply = { ok: true, message: await run(args) };
      } catch (error) {
        reply = { ok: false, message: (error as Error).message };
      }
      socket.end(`${JSON.stringify(reply)}\n`);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve));
  chmodSync(path, 0o600);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

/** The server's reply, or undefined when no server is listening (then the caller opens PGlite itself). */
export function sendToAdminSocket(path: string, args: string[]): Promise<AdminReply | undefined> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let output = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${JSON.stringify(args)}\n`));
    socket.on('data', (chunk) => (output += chunk));
    socket.on('end', () => {
      try {
        resolve(JSON.parse(output) as AdminReply);
      } catch {
        reject(new Error('The running server gave no answer'));
      }
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve(undefined);
      else reject(error);
    });
  });
}

/** True when a server is listening on the data directory's admin socket. */
export function adminSocketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
