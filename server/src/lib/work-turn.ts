import pg from 'pg';
import type { Logger } from 'pino';

/**
 * A waiter asks again this often, so that the turn of a holder whose process died (its connection
 * ended, and the lock with it) passes on within it. A holder that stops says so, and a waiter takes
 * the turn at once.
 */
const ASK_AGAIN_MS = 1000;

/**
 * Lets the turn go and tells the waiters, if this connection holds it: also when `stop()` came while
 * an ask was on its way and that ask was granted (it runs after the ask, on the same connection). A
 * connection that does not hold it unlocks nothing: an unlock of a lock not held warns in the log.
 */
const LET_GO = `select pg_advisory_unlock($1, $2), pg_notify($3, '') from pg_locks
  where locktype = 'advisory' and pid = pg_backend_pid() and granted
    and classid = $1::int4::oid and objid = $2::int4::oid and objsubid = 2`;

/**
 * The turn to hear a kind of work's signals, held by one process at a time of those that run its
 * workers, so that a signal wakes one process and one claim rather than every worker's. The turn is
 * a session-level advisory lock held on a connection of the turn's own: a holder that dies passes it
 * on with its connection. The others ask for it with `pg_try_advisory_lock` and wait between asks,
 * idle: a statement that waited in the lock's queue held a snapshot all the while, and that held back
 * every table's cleanup of dead rows (the claims read eight times the pages: docs/benchmarks.md, the
 * fifty-eighth session), and each round of its wait ended in an error in PostgreSQL's log. A holder
 * that stops lets go and tells the waiters on `${channel}_free`. The holder listens on `channel`
 * while it holds the turn; on getting it, it is told (`onTurn`), since signals sent while nobody held
 * it reached nobody.
 */
export function createWorkTurn(options: {
  postgresUrl: string;
  channel: string;
  /** The advisory lock's key, of two numbers (a space apart from one-number keys, such as the job queue's). */
  lockKey: [number, number];
  onMessage: (payload: string | undefined) => void;
  onTurn: () => void;
  logger: Logger;
  /** How long a waiter waits between asks when nobody tells it the turn was let go (tests: longer). */
  askAgainMs?: number;
}) {
  const askAgainMs = options.askAgainMs ?? ASK_AGAIN_MS;
  const freeChannel = `${options.channel}_free`;
  let client: pg.Client | undefined;
  let holding = false;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  /** Failed connections in a row: the wait before the next try doubles with each. */
  let failures = 0;
  /** Ends a waiter's wait between asks (the turn was let go, or this process stops). */
  let askNow: (() => void) | undefined;
  /** The turn was let go since the last ask began: the next ask is at once (its notice may come before the answer). */
  let letGo = false;

  /** True once `next` holds the turn; false when it was replaced or stopped while waiting. */
  async function waitForTurn(next: pg.Client): Promise<boolean> {
    while (client === next) {
      letGo = false;
      const { rows } = await next.query<{ taken: boolean }>('select pg_try_advisory_lock($1, $2) as taken', options.lockKey);
      if (rows[0]?.taken) return true;
      if (letGo) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, askAgainMs);
        askNow = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      askNow = undefined;
    }
    return false;
  }

  async function join(): Promise<void> {
    if (stopped) return;
    const next = new pg.Client({ connectionString: options.postgresUrl });
    client = next;
    next.on('notification', (message) => {
      if (message.channel === freeChannel) {
        letGo = true;
        askNow?.();
      } else options.onMessage(message.payload);
    });
    const lost = () => {
      if (client !== next) return;
      client = undefined;
      holding = false;
      askNow?.();
      retryTimer = setTimeout(() => void join(), Math.min(30_000, 500 * 2 ** failures++));
    };
    next.on('error', lost);
    next.on('end', lost);
    try {
      await next.connect();
      failures = 0;
      await next.query(`listen ${freeChannel}`);
      if (!(await waitForTurn(next))) return;
      await next.query(`unlisten ${freeChannel}; listen ${options.channel}`);
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
    /** Starts asking for the turn (at once, or again after a lost connection, until stopped). */
    start(): void {
      if (!stopped && !client) void join();
    },
    /** Whether this process holds the turn now. */
    get holding(): boolean {
      return holding;
    },
    /** Stops waiting, or gives the turn up: a waiter takes it at once. */
    async stop(): Promise<void> {
      stopped = true;
      holding = false;
      clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      askNow?.();
      // Let go before telling (a NOTIFY is delivered as its statement commits, after the unlock).
      await current?.query(LET_GO, [...options.lockKey, freeChannel]).catch(() => {});
      await current?.end().catch(() => {});
    },
  };
}

export type WorkTurn = ReturnType<typeof createWorkTurn>;
