import pg from 'pg';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { busesOnTestDatabase, connected, listen } from '../../test/helpers/bus.ts';
import { eventually } from '../../test/helpers/eventually.ts';
import { createMainThreadLoad } from './main-thread-load.ts';
import { BUS_TOPICS } from './process-bus.ts';
import { createWorkTurn } from './work-turn.ts';

const onPostgres = process.env.TEST_DB === 'postgres';

describe.runIf(onPostgres)('the work turn: one worker process hears an action run signal (PostgreSQL)', () => {
  // A holder relays what comes while its main thread is busy: not in these tests unless they say so.
  const { url, bus } = busesOnTestDatabase({ mainThreadBusy: () => false });
  /** A worker process's bus that holds the turn (the first in line) or waits for it. */
  async function worker(takes: boolean, options: { holds: boolean; mainThreadBusy?: () => boolean }) {
    const created = bus(options);
    const heard = listen(created, takes);
    await created.listenForWork();
    if (options.holds) await eventually('the worker holds the turn', () => created.holdsWorkTurn || undefined);
    return [created, heard] as const;
  }

  it("a serve's signal and its commit notice wake the holder alone", async () => {
    const serve = bus();
    const serveHeard = listen(serve);
    const [holder, holderHeard] = await worker(true, { holds: true });
    const [waiting, waitingHeard] = await worker(true, { holds: false });
    await connected([serve, serveHeard], [holder, holderHeard], [waiting, waitingHeard]);

    const client = new pg.Client({ connectionString: url() });
    await client.connect();
    try {
      const notice = serve.commitNotice(BUS_TOPICS.actionRuns)!;
      await client.query('select pg_notify($1, $2)', [notice.channel, notice.payload]);
      await holderHeard.until('action-runs:');
    } finally {
      await client.end();
    }
    serve.signal(BUS_TOPICS.actionRuns);
    await holderHeard.until('action-runs:', 2);
    // Had the holder told the others, that NOTIFY would have gone before this one, on the same connection.
    await holder.publish(BUS_TOPICS.session, 'after');
    await waitingHeard.until('session:after');
    expect(waitingHeard.heard).toEqual(['session:after']);
    expect(waiting.holdsWorkTurn).toBe(false);
    expect(serve.holdsWorkTurn).toBe(false);
  });

  it("a worker's signal of work it does not take goes to the holder", async () => {
    const [holder, holderHeard] = await worker(true, { holds: true });
    const [full, fullHeard] = await worker(false, { holds: false });
    await connected([holder, holderHeard], [full, fullHeard]);

    full.signal(BUS_TOPICS.actionRuns);
    await holderHeard.until('action-runs:');
    expect(fullHeard.heard).toEqual(['action-runs:']);
  });

  it.each([
    { why: 'its slots are full', takes: false, busy: false },
    { why: 'its main thread is busy', takes: true, busy: true },
  ])('the holder tells every worker of the work when $why', async ({ takes, busy }) => {
    const serve = bus();
    const serveHeard = listen(serve);
    const [holder, holderHeard] = await worker(takes, { holds: true, mainThreadBusy: () => busy });
    const [other, otherHeard] = await worker(true, { holds: false });
    await connected([serve, serveHeard], [holder, holderHeard], [other, otherHeard]);

    serve.signal(BUS_TOPICS.actionRuns);
    await otherHeard.until('action-runs:');
    expect(holderHeard.heard).toEqual(['action-runs:']);
    expect(other.holdsWorkTurn).toBe(false);
  });

  it("what is not a bus message on the turn's channel wakes nobody and is not relayed", async () => {
    const serve = bus();
    const serveHeard = listen(serve);
    // A holder that takes nothing relays whatever it is given.
    const [holder, holderHeard] = await worker(false, { holds: true });
    const [other, otherHeard] = await worker(true, { holds: false });
    await connected([serve, serveHeard], [holder, holderHeard], [other, otherHeard]);

    const client = new pg.Client({ connectionString: url() });
    await client.connect();
    try {
      for (const payload of [
        '',
        'not json',
        'null',
        '"action-runs"',
        '42',
        '[]',
        '{}',
        '{"t":"action-runs","k":7}',
        '{"t":{},"k":""}',
      ])
        await client.query(`select pg_notify('agent_platform_work_turn', $1)`, [payload]);
    } finally {
      await client.end();
    }
    serve.signal(BUS_TOPICS.actionRuns);
    await otherHeard.until('action-runs:');
    await holder.publish(BUS_TOPICS.session, 'after');
    await otherHeard.until('session:after');
    // The one real signal, heard by the holder and relayed once; nothing of the rest.
    expect(holderHeard.heard).toEqual(['action-runs:', 'session:after']);
    expect(otherHeard.heard).toEqual(['action-runs:', 'session:after']);
  });

  it('a waiter waits between its asks, not inside a statement: it holds no snapshot, so the cleanup of dead rows is not held back', async () => {
    const [holder, holderHeard] = await worker(true, { holds: true });
    const [waiting, waitingHeard] = await worker(true, { holds: false });
    await connected([holder, holderHeard], [waiting, waitingHeard]);
    const admin = new pg.Client({ connectionString: url() });
    await admin.connect();
    try {
      const asking = await eventually('the waiter has asked for the turn and waits', async () => {
        const { rows } = await admin.query<{ state: string; backend_xmin: string | null; wait_event_type: string | null }>(
          `select state, backend_xmin, wait_event_type from pg_stat_activity
            where datname = current_database() and query like '%advisory_lock%' and pid <> pg_backend_pid()
              and pid not in (select pid from pg_locks where locktype = 'advisory' and objsubid = 2 and granted)`,
        );
        return rows.length === 1 && (rows[0]!.state === 'idle' || rows[0]!.wait_event_type === 'Lock') ? rows[0] : undefined;
      });
      // A statement waiting in the lock's queue keeps the snapshot it started with (backend_xmin).
      expect(asking).toEqual({ state: 'idle', backend_xmin: null, wait_event_type: 'Client' });
    } finally {
      await admin.end();
    }
    expect(waiting.holdsWorkTurn).toBe(false);
  });

  it('a process that stops while its ask for the turn is being granted lets the turn go and tells the waiters', async () => {
    const lockKey: [number, number] = [0x74657374, 7];
    const held: string[] = [];
    // Waiters that nobody tells ask again only in an hour: the turn passes here only if they are told.
    const turn = (name: string) =>
      createWorkTurn({
        postgresUrl: url(),
        channel: 'work_turn_race',
        lockKey,
        onMessage: () => {},
        onTurn: () => held.push(name),
        logger: pino({ level: 'silent' }),
        askAgainMs: 3_600_000,
      });
    const admin = new pg.Client({ connectionString: url() });
    await admin.connect();
    const waiting = turn('waiting');
    const stopping = turn('stopping');
    const send = pg.Client.prototype.query;
    const query = vi.spyOn(pg.Client.prototype, 'query');
    try {
      await admin.query('select pg_advisory_lock($1, $2)', lockKey);
      waiting.start();
      await eventually('the waiter has asked once and waits', async () => {
        const { rows } = await admin.query(
          `select 1 from pg_stat_activity where datname = current_database() and state = 'idle'
              and query like 'select pg_try_advisory_lock%'`,
        );
        return rows.length === 1 || undefined;
      });
      // Let go without telling anyone: the next ask, the stopping process's, is granted.
      await admin.query('select pg_advisory_unlock($1, $2)', lockKey);
      let stopped = false;
      query.mockImplementation(function (this: pg.Client, ...args: unknown[]) {
        const sent = (send as (...given: unknown[]) => unknown).apply(this, args);
        // The next ask is the stopping process's: it stops after the ask was sent, before the answer.
        if (!stopped && typeof args[0] === 'string' && args[0].startsWith('select pg_try_advisory_lock')) {
          stopped = true;
          void stopping.stop();
        }
        return sent;
      } as typeof send);
      stopping.start();
      await eventually('the waiter holds the turn', () => waiting.holding || undefined);
      expect(held).toEqual(['waiting']);
      expect(stopping.holding).toBe(false);
    } finally {
      query.mockRestore();
      await waiting.stop();
      await stopping.stop();
      await admin.end();
    }
  });

  it('the turn passes to a waiter when its holder stops or its process dies, and the new holder claims at once', async () => {
    const serve = bus();
    const serveHeard = listen(serve);
    const [first, firstHeard] = await worker(true, { holds: true });
    const [second, secondHeard] = await worker(true, { holds: false });
    await connected([serve, serveHeard], [first, firstHeard], [second, secondHeard]);

    await first.stopWork();
    await eventually('the second holds the turn', () => second.holdsWorkTurn || undefined);
    // What was signalled while nobody held the turn reached nobody: the new holder claims on getting it.
    await secondHeard.until('action-runs:');
    expect(first.holdsWorkTurn).toBe(false);

    const [third, thirdHeard] = await worker(true, { holds: false });
    const admin = new pg.Client({ connectionString: url() });
    await admin.connect();
    try {
      // The holder's process dies: its connection ends, and the lock with it (nobody is told); its
      // bus is closed at once, so that it does not come back and ask for the turn again.
      const { rows } = await admin.query<{ pid: number }>(
        `select pid from pg_locks where locktype = 'advisory' and objsubid = 2 and granted
           and database = (select oid from pg_database where datname = current_database())`,
      );
      expect(rows).toHaveLength(1);
      await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      await second.close();
    } finally {
      await admin.end();
    }
    await eventually('the third holds the turn', () => third.holdsWorkTurn || undefined);
    await thirdHeard.until('action-runs:');
    serve.signal(BUS_TOPICS.actionRuns);
    await thirdHeard.until('action-runs:', 2);
    expect(firstHeard.heard.filter((message) => message === 'action-runs:')).toEqual([]);
  });
});

describe("the main thread's load", () => {
  it('counts a window mostly on the CPU as busy, and one mostly waiting or kept off it as not', () => {
    const readings = { now: 1_000, cpu: 500 };
    const load = createMainThreadLoad({ windowMs: 250, busyShare: 0.8, now: () => readings.now, cpuMs: () => readings.cpu });
    expect(load.busy()).toBe(false); // the first question starts the first measure
    Object.assign(readings, { now: 1_300, cpu: 770 }); // 270 of 300 ms on the CPU
    expect(load.busy()).toBe(true);
    Object.assign(readings, { now: 1_400, cpu: 780 }); // within the window: the last measure holds
    expect(load.busy()).toBe(true);
    // Its loop ran callbacks all along but the thread was on the CPU a third of the time: not busy.
    Object.assign(readings, { now: 1_600, cpu: 870 }); // 100 of 300 ms
    expect(load.busy()).toBe(false);
  });

  it("reads this thread's time on the CPU: a thread held in a wait is not busy", () => {
    const load = createMainThreadLoad({ windowMs: 50, busyShare: 0.8 });
    load.busy();
    // Blocked, as a thread kept off the CPU is: its event loop's utilization would count this as fully used.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 80);
    expect(load.busy()).toBe(false);
  });
});
