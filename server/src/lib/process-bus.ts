import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { createMainThreadLoad } from './main-thread-load.ts';
import { createSignalWindows } from './signal-windows.ts';
import { createWorkTurn, type WorkTurn } from './work-turn.ts';

const CHANNEL = 'agent_platform_invalidate';
/**
 * Wake-ups for workers travel apart from invalidations: a process that runs no workers (a `serve`
 * with RUN_WORKERS=false) does not listen to them, so is not woken by every commit of every process.
 * Its PostgreSQL backend still is: PostgreSQL wakes every backend that listens on any channel of the
 * database at each NOTIFY, and each reads the queue in a transaction (docs/benchmarks.md, the
 * seventy-fourth session: about 14 µs of PostgreSQL's CPU per listening connection and NOTIFY).
 */
const WORK_CHANNEL = 'agent_platform_work';
/** The signals of TURN_TOPICS travel here, heard by the one process that holds the work turn (lib/work-turn.ts). */
const TURN_CHANNEL = 'agent_platform_work_turn';
/** The turn's advisory lock key: "ap_t", then the turn (one so far). */
const TURN_LOCK_KEY: [number, number] = [0x61705f74, 1];
/** The key a handler receives when messages may have been missed: drop everything. */
export const INVALIDATE_ALL = '*';

/** What travels on the bus: cache invalidations (keyed) and the callback dispatchers' wake-up. */
export const BUS_TOPICS = {
  /** A session ended (key: token hash, or `user:<id>` for all of a user's sessions). */
  session: 'session',
  /** A webhook's configuration changed (key: its identifier). */
  webhook: 'webhook',
  /** An action rule changed (key: its id). */
  actionRule: 'action-rule',
  /** An org's MCP servers changed (key: the org's id): its tools are read again. */
  mcpServers: 'mcp-servers',
  /**
   * An inbox (key: `inbox <address>`) or an org's mail integration (key: `org <id>`) changed: the mail
   * intake's routes are read again.
   */
  inboxRoutes: 'inbox-routes',
  /** An org's or one of its agents' budget changed (key: the org's id): its budgets are read again. */
  budgets: 'budgets',
  /** Callbacks are due now: the dispatchers look (a signal, no key). */
  callbacks: 'callbacks',
  /** Runnable actions were committed (or a lease given up): the run dispatchers claim (a signal, no key). */
  actionRuns: 'action-runs',
  /** Mail notifications were stored: the notification processors claim (a signal, no key). */
  emailNotifications: 'email-notifications',
  /** Experiments' results wait to be replayed: the experiment dispatchers claim (a signal, no key). */
  experiments: 'experiments',
  /** An experiment ended before its results were all stored (cancelled, or a budget): its replays stop (key: its id). */
  experimentEnded: 'experiment-ended',
  /**
   * Ledger rows or approvals of an org changed (key: JSON `{ org, kind, ids }`). Sent by the
   * database's triggers on commit (migration 0011), never by a process: features/events streams them.
   */
  orgEvents: 'org-events',
} as const;
/**
 * Signals that wake one worker process, not all: the one that holds the work turn, which takes the
 * work or, when it cannot (its slots are full, it is stopping, its main thread is busy), relays the
 * signal to every worker. Every worker that heard an action run's signal claimed once, and all but one
 * found nothing: a wake-up and a statement each, for nothing.
 */
const TURN_TOPICS: ReadonlySet<string> = new Set([BUS_TOPICS.actionRuns]);
/** Jobs of a queue were committed: its workers in every process fetch now, not at their next poll (a signal). */
export const jobsTopic = (queue: string) => `jobs:${queue}` as const;
export type BusTopic = (typeof BUS_TOPICS)[keyof typeof BUS_TOPICS] | ReturnType<typeof jobsTopic>;

/**
 * Messages between this service's processes: cached data changed (sessions, webhook configs and
 * action rules subscribe per topic), or work was committed (signals, heard by the processes that run
 * workers). With PostgreSQL, messages travel by LISTEN/NOTIFY; after a lost listener connection,
 * subscribers get INVALIDATE_ALL, since messages may have been missed meanwhile.
 */
export interface ProcessBus {
  publish(topic: BusTopic, key: string): Promise<void>;
  /**
   * A wake-up, where one is as good as many: this process's subscribers hear it at once; other
   * processes within a few milliseconds, a burst of signals travelling as one NOTIFY
   * (lib/signal-windows.ts; each costs the database a serialized commit step). Other processes are
   * not told of work that a subscriber here takes (its handler returns true) nor, with `sent`, of
   * work whose own commit told them. A signal of TURN_TOPICS goes to the process that holds the work
   * turn, or from that process to every worker.
   */
  signal(topic: BusTopic, sent?: CommitNotice): void;
  /**
   * For a statement about to commit work of `topic`, in a process that runs no workers (a serve):
   * the NOTIFY to send in that statement (`pg_notify(channel, payload)`), so that the workers hear of
   * the work as it commits, not a round trip and a commit of their own later. Pass it to `signal` after
   * the commit. Undefined where `signal` alone is right: this process runs workers (they may take the
   * work themselves), has no PostgreSQL, or a NOTIFY went within the window (one follows at its end).
   */
  commitNotice(topic: BusTopic): CommitNotice | undefined;
  /**
   * This process runs workers: from now on it hears the signals of other processes too, and asks for
   * the work turn (TURN_TOPICS' signals) until it holds it.
   */
  listenForWork(): Promise<void>;
  /** This process takes no more work (it is stopping): the work turn passes to a waiting worker now. */
  stopWork(): Promise<void>;
  /** Whether this process holds the work turn now. */
  readonly holdsWorkTurn: boolean;
  /**
   * `handler` hears the topic's messages. For a signal it returns true when this process takes the
   * work now (it runs that worker, started, with room): other processes are then not woken for it.
   */
  subscribe(topic: BusTopic, handler: (key: string) => unknown): void;
  close(): Promise<void>;
}

/** A NOTIFY for a statement to send as it commits. */
export interface CommitNotice {
  channel: string;
  payload: string;
}

export function createProcessBus(options: {
  postgresUrl?: string;
  /** The embedded database's own LISTEN (PGlite): its triggers' messages reach this process's subscribers. */
  listenInProcess?: (channel: string, handler: (payload: string) => void) => Promise<void>;
  /** Whether this process's main thread is too busy to keep its turn's work to itself (lib/main-thread-load.ts). */
  mainThreadBusy?: () => boolean;
  logger: Logger;
}): ProcessBus {
  const mainThreadBusy = options.mainThreadBusy ?? createMainThreadLoad({ windowMs: 250, busyShare: 0.8 }).busy;
  const handlers = new Map<string, Array<(key: string) => unknown>>();
  const origin = randomUUID();
  /** True when a subscriber here takes the work (a signal). */
  const deliver = (topic: string, key: string): boolean => {
    let taken = false;
    for (const handler of handlers.get(topic) ?? []) taken = handler(key) === true || taken;
    return taken;
  };
  /** Another process's message; undefined for this process's own, and for anything not a bus message. */
  const parse = (payload: string | undefined) => {
    let message: { o?: unknown; t?: unknown; k?: unknown } | null;
    try {
      message = JSON.parse(payload ?? '');
    } catch {
      return undefined;
    }
    if (typeof message?.t !== 'string' || typeof message.k !== 'string' || message.o === origin) return undefined;
    return { t: message.t, k: message.k };
  };
  const onMessage = (payload: string | undefined) => {
    const message = parse(payload);
    if (message) deliver(message.t, message.k);
  };
  /** A signal to the turn's holder (this process): work it cannot take now goes to every worker. */
  const onTurnMessage = (payload: string | undefined) => {
    const message = parse(payload);
    if (message && (!deliver(message.t, message.k) || mainThreadBusy())) tellOthers(message.t);
  };
  const deliverAll = () => {
    for (const topic of handlers.keys()) deliver(topic, INVALIDATE_ALL);
  };

  let client: pg.Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let publisher: pg.Pool | undefined;
  let hearsWork = false;
  let turn: WorkTurn | undefined;

  async function connect(attempt = 0): Promise<void> {
    if (closed || !options.postgresUrl) return;
    const next = new pg.Client({ connectionString: options.postgresUrl });
    next.on('notification', (message) => onMessage(message.payload));
    const reconnect = () => {
      if (closed || client !== next) return;
      client = undefined;
      deliverAll();
      retryTimer = setTimeout(() => void connect(attempt + 1), Math.min(30_000, 500 * 2 ** attempt));
    };
    next.on('error', reconnect);
    next.on('end', reconnect);
    try {
      await next.connect();
      await next.query(`listen ${CHANNEL}`);
      if (hearsWork) await next.query(`listen ${WORK_CHANNEL}`);
      // No await between a false check and this: a listenForWork() that came after the check finds this client.
      client = next;
      if (attempt > 0) deliverAll();
    } catch (error) {
      options.logger.warn({ err: error }, 'cache invalidation listener could not connect; retrying');
      await next.end().catch(() => {});
      retryTimer = setTimeout(() => void connect(attempt + 1), Math.min(30_000, 500 * 2 ** attempt));
    }
  }
  const ready = options.postgresUrl
    ? connect()
    : options
        .listenInProcess?.(CHANNEL, onMessage)
        .catch((error: unknown) => options.logger.warn({ err: error }, 'could not listen to the embedded database'));
  const payloadOf = (topic: string, key: string) => JSON.stringify({ o: origin, t: topic, k: key });
  /** Tells the other processes (this one has been told already). */
  const send = async (channel: string, topic: string, key: string) => {
    if (!publisher) return;
    await ready;
    await publisher.query('select pg_notify($1, $2)', [channel, payloadOf(topic, key)]);
  };
  /** Where other processes hear a signal: the turn's holder, unless this process is it (then every worker). */
  const channelOf = (topic: string) => (TURN_TOPICS.has(topic) && !turn?.holding ? TURN_CHANNEL : WORK_CHANNEL);
  /** Signals on their way to the database: a close waits for them before it ends the connection. */
  const sending = new Set<Promise<void>>();
  const notify = (topic: string) => {
    const sent = send(channelOf(topic), topic, '')
      .catch((error: unknown) => options.logger.warn({ err: error, topic }, 'could not signal other processes'))
      .finally(() => sending.delete(sent));
    sending.add(sent);
  };
  const signalWindows = createSignalWindows(notify);
  /** Tells the other processes of work this one does not take, a burst within the window as one NOTIFY. */
  function tellOthers(topic: string, sent?: CommitNotice): void {
    if (publisher && !closed) signalWindows.tell(topic, sent !== undefined);
  }
  if (options.postgresUrl) publisher = new pg.Pool({ connectionString: options.postgresUrl, max: 1 });
  publisher?.on('error', () => {});

  return {
    async publish(topic, key) {
      deliver(topic, key);
      await send(CHANNEL, topic, key);
    },
    signal(topic, sent) {
      if (!deliver(topic, '')) tellOthers(topic, sent);
    },
    commitNotice(topic) {
      if (hearsWork || !publisher || closed || signalWindows.isOpen(topic)) return undefined;
      return { channel: channelOf(topic), payload: payloadOf(topic, '') };
    },
    async listenForWork() {
      hearsWork = true;
      if (options.postgresUrl && !turn && !closed) {
        turn = createWorkTurn({
          postgresUrl: options.postgresUrl,
          channel: TURN_CHANNEL,
          lockKey: TURN_LOCK_KEY,
          onMessage: onTurnMessage,
          // Signals sent while nobody held the turn reached nobody: its work is claimed now.
          onTurn: () => {
            for (const topic of TURN_TOPICS) deliver(topic, '');
          },
          logger: options.logger,
        });
        turn.start();
      }
      await ready;
      // A lost connection is not fatal here: the reconnect listens to both channels.
      await client
        ?.query(`listen ${WORK_CHANNEL}`)
        .catch((error: unknown) => options.logger.warn({ err: error }, 'could not listen for work yet; the reconnect will'));
    },
    subscribe(topic, handler) {
      handlers.set(topic, [...(handlers.get(topic) ?? []), handler]);
    },
    async stopWork() {
      await turn?.stop();
    },
    get holdsWorkTurn() {
      return turn?.holding ?? false;
    },
    async close() {
      closed = true;
      await turn?.stop();
      clearTimeout(retryTimer);
      signalWindows.close();
      await Promise.all(sending);
      await ready;
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
      await publisher?.end().catch(() => {});
    },
  };
}
