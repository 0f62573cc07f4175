import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { BUS_TOPICS, INVALIDATE_ALL, type ProcessBus } from '../../lib/process-bus.ts';

/** What the console hears: ledger rows (by row id) or approvals (by action id) of one org changed. */
export interface OrgChange {
  /** This process's sequence number, the SSE event id a reconnect resumes after. */
  seq: number;
  org: string;
  kind: 'ledger' | 'approval';
  /** null: too many to list; refetch everything. */
  ids: string[] | null;
}

export type OrgChangeListener = (change: OrgChange | 'resync') => void;

/**
 * The database's announcement (migration 0011) as one change per org: `changes` lists [org, id]
 * pairs; `orgs` alone means too many to list.
 */
function parseAnnouncement(key: string, nextSeq: () => number): OrgChange[] {
  let parsed: { kind?: unknown; changes?: unknown; orgs?: unknown };
  try {
    parsed = JSON.parse(key);
  } catch {
    return [];
  }
  const { kind } = parsed;
  if (kind !== 'ledger' && kind !== 'approval') return [];
  const byOrg = new Map<string, string[] | null>();
  if (Array.isArray(parsed.changes)) {
    for (const pair of parsed.changes) {
      const [org, id] = Array.isArray(pair) ? pair : [];
      if (typeof org !== 'string' || typeof id !== 'string') continue;
      const ids = byOrg.get(org) ?? [];
      if (!ids.includes(id)) ids.push(id);
      byOrg.set(org, ids);
    }
  } else if (Array.isArray(parsed.orgs)) {
    for (const org of parsed.orgs) if (typeof org === 'string') byOrg.set(org, null);
  }
  return [...byOrg].map(([org, ids]) => ({ seq: nextSeq(), org, kind, ids }));
}

/** Changes kept for reconnecting streams: a reconnect within (at least) this many changes misses none. */
const REPLAY_BUFFER = 2000;
/** While this process has streams open, its row in org_event_streams is renewed this often... */
const WATCH_RENEW_MS = 30_000;
/** ...and lapses this long after the last renewal (a process that died stops the announcements). */
const WATCH_LEASE_SECONDS = 90;

/**
 * The database announces changes only while some process has streams open (migration 0011): this
 * process's row says so, renewed while it has streams and left to lapse after (deleting it could
 * race a renewal). `open()` resolves once announcements are on for certain.
 */
function createWatchLease(db: Kysely<DB>, clock: Clock, logger: Logger) {
  const processId = randomUUID();
  let renewal: NodeJS.Timeout | undefined;
  /** Until when (this process's clock, with a margin) the row is known to be current. */
  let currentUntil = 0;
  const renew = async () => {
    const started = clock.now().getTime();
    await sql`insert into org_event_streams (process_id, expires_at)
      values (${processId}, now() + ${WATCH_LEASE_SECONDS} * interval '1 second')
      on conflict (process_id) do update set expires_at = excluded.expires_at`.execute(db);
    currentUntil = started + (WATCH_LEASE_SECONDS - 30) * 1000;
  };
  const renewInBackground = () =>
    void renew().catch((error: unknown) => logger.warn({ err: error }, 'could not renew the event stream lease'));
  return {
    /** Holds the lease; true when announcements were off until now (changes before may be unannounced). */
    async open(): Promise<boolean> {
      const wasCurrent = clock.now().getTime() < currentUntil;
      if (!renewal) {
        renewal = setInterval(renewInBackground, WATCH_RENEW_MS);
        renewal.unref();
        if (wasCurrent) renewInBackground();
      }
      if (wasCurrent) return false;
      await renew();
      return true;
    },
    /** No streams left: stop renewing (the row lapses). */
    release() {
      clearInterval(renewal);
      renewal = undefined;
    },
  };
}

/**
 * Fans the database's change announcements (migration 0011, through the process bus) out to the
 * org's open event streams, and keeps the latest ones so that a stream that reconnects with
 * Last-Event-ID gets what it missed. Event ids carry a prefix random per process run, so an id from
 * another process (or before a restart) is recognised as unknown and answered with `resync`.
 */
export function createOrgEvents(deps: { bus: ProcessBus; db: Kysely<DB>; clock: Clock; logger: Logger }) {
  const epoch = randomUUID().slice(0, 8);
  const lease = createWatchLease(deps.db, deps.clock, deps.logger);
  const listeners = new Map<string, Set<OrgChangeListener>>();
  const recent: OrgChange[] = [];
  let seq = 0;

  deps.bus.subscribe(BUS_TOPICS.orgEvents, (key) => {
    // A lost bus connection may have dropped announcements: every stream refetches.
    if (key === INVALIDATE_ALL) {
      for (const set of listeners.values()) for (const listener of set) listener('resync');
      return;
    }
    for (const change of parseAnnouncement(key, () => ++seq)) {
      recent.push(change);
      // Trimmed in steps, not one shift per change (which copies the whole buffer).
      if (recent.length > REPLAY_BUFFER + REPLAY_BUFFER / 4) recent.splice(0, recent.length - REPLAY_BUFFER);
      for (const listener of listeners.get(change.org) ?? []) listener(change);
    }
  });

  return {
    eventId: (change: OrgChange) => `${epoch}-${change.seq}`,

    /**
     * Starts listening for `orgId`; returns the changes missed since `lastEventId`, or 'resync' when
     * they cannot be known (an id of another process or run, or announcements were off until now).
     */
    async subscribe(
      orgId: string,
      listener: OrgChangeListener,
      lastEventId?: string | null,
    ): Promise<{ missed: OrgChange[] | 'resync'; stop: () => void }> {
      const set = listeners.get(orgId) ?? new Set();
      set.add(listener);
      listeners.set(orgId, set);
      const stop = () => {
        set.delete(listener);
        if (set.size === 0) listeners.delete(orgId);
        if (listeners.size === 0) lease.release();
      };
      let announcedBefore: boolean;
      try {
        announcedBefore = !(await lease.open());
      } catch (error) {
        stop();
        throw error;
      }
      if (!announcedBefore) return { missed: 'resync', stop };
      if (!lastEventId) return { missed: [], stop };
      const [idEpoch, idSeq] = lastEventId.split('-');
      const after = Number(idSeq);
      const oldest = recent[0]?.seq ?? seq + 1;
      // Resumable: our id, and nothing dropped from the buffer since.
      if (idEpoch !== epoch || !Number.isInteger(after) || after > seq || after < oldest - 1) return { missed: 'resync', stop };
      return { missed: recent.filter((change) => change.seq > after && change.org === orgId), stop };
    },
  };
}

export type OrgEvents = ReturnType<typeof createOrgEvents>;
