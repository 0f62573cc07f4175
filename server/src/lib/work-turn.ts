import pg from 'pg';
import type { Logger } from 'pino';

/**
 * A waiter asks again this often, so that the backend of a waiter whose process died (it notices only
 * when it answers) leaves the line within it.
 */
const WAIT_ROUND = '10s';

/**
 * The turn to hear a kind of work's signals, held by one process at a time of those that run its
 * workers, so that a signal wakes one process and one claim rather than every worker's. The line is
 * PostgreSQL's advisory lock queue on a connection of the turn's own: the others wait there, and the
 * next gets the turn in order as soon as the holder gives it up or its connection ends (a holder that
 * dies passes it on at once). The holder listens on `channel` while it holds it; on getting the turn
 * it is told (`onTurn`), since signals sent while nobody held it reached nobody.
 */
export function createWorkTurn(options: {
  postgresUrl: string;
  channel: string;
  /** The advisory lock's key, of two numbers (a space apart from one-number keys, such as the job queue's). */
  lockKey: [number, number];
  onMessage: (payload: string | undefined) => void;
  onTurn: () => void;
  logger: Logger;
}) {
  let client: pg.Client | undefined;
  let holding = false;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  /** Failed connections in a row: the wait before the next try doubles with each. */
  let failures = 0;

  async function waitForTurn(next: pg.Client): Promise<void> {
    for (;;) {
      try {
        await next.query('select pg_advisory_lock($1, $2)', options.lockKey);
        return;
      } catch (error) {
        // lock_not_available: the round ended with the turn still held; it waits again, at the back
        // of the line (which waiter comes next does not matter).
        if ((error as { code?: string }).code !== '55P03') throw error;
      }
    }
  }

  async function join(): Promise<void> {
    if (stopped) return;
    const next = new pg.Client({ connectionString: options.postgresUrl });
    client = next;
    next.on('notification', (message) => options.onMessage(message.payload));
    const lost = () => {
      if (client !== next) return;
      client = undefined;
      holding = false;
      retryTimer = setTimeout(() => void join(), Math.min(30_000, 500 * 2 ** failures++));
    };
    next.on('error', lost);
    next.on('end', lost);
    try {
      await next.connect();
      failures = 0;
      await next.query(`set statement_timeout = 0; set lock_timeout = '${WAIT_ROUND}'`);
      await waitForTurn(next);
      await next.query(`listen ${options.channel}`);
      if (client !== next) return;
      holding = true;
      options.onTurn();
    } catch (error) {
      if (client !== next) return;
      options.logger.warn({ err: error }, 'could not wait for the work turn; retrying');
      lost();
      await next.end().catch(() => {});
    }
  }

  return {
    /** Joins the line (at once, or again after a lost connection, until stopped). */
    start(): void {
      if (!stopped && !client) void join();
    },
    /** Whether this process holds the turn now. */
    get holding(): boolean {
      return holding;
    },
    /** Leaves the line, or gives the turn up: the next waiter gets it at once. */
    async stop(): Promise<void> {
      stopped = true;
      holding = false;
      clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}

export type WorkTurn = ReturnType<typeof createWorkTurn>;
