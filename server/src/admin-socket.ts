import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { ConfigError } from './config.ts';

/**
 * Embedded PGlite belongs to one process. The process that opens it first holds this Unix socket in
 * the data directory (readable by its owner only): it is the directory's lock, since a second
 * process finds it answering and stops before it opens the database, and its door, since admin
 * commands from another terminal (`users create`, ...) are carried out through it by the process
 * that holds the database. On PostgreSQL there is no socket: processes share the database, the CLI
 * reaches it with DATABASE_URL, and nothing is written to the working directory.
 */
export const adminSocketPath = (dataDir: string) => join(dataDir, 'admin.sock');

interface AdminReply {
  ok: boolean;
  message: string;
}

export interface EmbeddedDatabaseLock {
  /** From now on admin commands sent to the socket are run by `run`; before, they are told to try again. */
  answerWith(run: (args: string[]) => Promise<string>): void;
  release(): Promise<void>;
}

/**
 * Takes the data directory's socket, or says which process holds it. A socket left by a process that
 * was killed answers nothing: it is removed and taken. (Two processes that find the same stale socket
 * at the same instant can both take it; a live holder is never displaced.)
 */
export async function lockEmbeddedDatabase(dataDir: string): Promise<EmbeddedDatabaseLock> {
  const path = adminSocketPath(dataDir);
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ConfigError(`Cannot create the data directory ${dataDir} (${(error as Error).message}). ${EMBEDDED_NEEDS}`);
  }
  let run: ((args: string[]) => Promise<string>) | undefined;
  const server = createServer((socket) => {
    let input = '';
    socket.setEncoding('utf8');
    socket.on('data', async (chunk) => {
      input += chunk;
      if (!input.includes('\n')) return;
      let reply: AdminReply;
      try {
        const args = JSON.parse(input.slice(0, input.indexOf('\n'))) as unknown;
        if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string'))
          throw new Error('Expected a list of arguments');
        if (!run) throw new Error('The server that holds this data directory is starting or busy; try again in a moment.');
        reply = { ok: true, message: await run(args) };
      } catch (error) {
        reply = { ok: false, message: (error as Error).message };
      }
      socket.end(`${JSON.stringify(reply)}\n`);
    });
    socket.on('error', () => {});
  });
  try {
    await listen(server, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE') {
      throw new ConfigError(`Cannot use the data directory ${dataDir} (${(error as Error).message}). ${EMBEDDED_NEEDS}`);
    }
    if (await adminSocketAnswers(path)) {
      throw new ConfigError(
        `Another agent-platform process is serving from ${dataDir}. Embedded PGlite allows one process per data directory: ` +
          'stop that one, or set DATABASE_URL to run several processes on PostgreSQL.',
      );
    }
    rmSync(path, { force: true });
    await listen(server, path);
  }
  chmodSync(path, 0o600);
  return {
    answerWith(handler) {
      run = handler;
    },
    // Closing a listening Unix socket removes its file.
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const EMBEDDED_NEEDS =
  'Embedded PGlite needs a writable DATA_DIR; in production set DATABASE_URL (PostgreSQL), which writes nothing there.';

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject).listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
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

/** True when a process is listening on the data directory's admin socket. */
function adminSocketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
