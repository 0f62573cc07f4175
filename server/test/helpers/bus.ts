import pino from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { BUS_TOPICS, createProcessBus, type ProcessBus } from '../../src/lib/process-bus.ts';
import { eventually } from './eventually.ts';
import { createTestDatabaseUrl } from './test-database.ts';

type BusOptions = Pick<Parameters<typeof createProcessBus>[0], 'mainThreadBusy'>;

/**
 * For a describe block: a PostgreSQL database for its buses (as for processes of one deployment),
 * and `bus()` to make one. Each test's buses close after it, so that its workers give the work turn
 * up for the next test's.
 */
export function busesOnTestDatabase(defaults: BusOptions = {}) {
  let url = '';
  let drop: (() => Promise<void>) | undefined;
  let buses: ProcessBus[] = [];
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabaseUrl());
  });
  afterEach(async () => {
    await Promise.all(buses.map((created) => created.close()));
    buses = [];
  });
  afterAll(async () => {
    await drop?.();
  });
  return {
    url: () => url,
    bus(options: BusOptions = {}): ProcessBus {
      const created = createProcessBus({ postgresUrl: url, logger: pino({ level: 'silent' }), ...defaults, ...options });
      buses.push(created);
      return created;
    },
  };
}

/** What a bus's subscribers heard, in order, and a way to wait for a message; `takes`: its signals' work is taken here. */
export function listen(bus: ProcessBus, takes = false) {
  const heard: string[] = [];
  for (const topic of [BUS_TOPICS.callbacks, BUS_TOPICS.actionRuns, BUS_TOPICS.session])
    bus.subscribe(topic, (key) => {
      heard.push(`${topic}:${key}`);
      return takes;
    });
  const until = async (message: string, times = 1) => {
    for (const deadline = performance.now() + 10_000; heard.filter((item) => item === message).length < times; ) {
      if (performance.now() > deadline) throw new Error(`never heard ${message} (${times}x); heard ${heard.join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { heard, until };
}

/**
 * A bus listens once it has connected, and its own publish waits for that: a NOTIFY sent before
 * would never reach it. Once each has heard, through the database, one sent after all connected,
 * nothing earlier is on its way (a connection receives notifications in commit order), and each
 * starts from nothing. A bus hears its own messages at once, not through the database: so two
 * markers from two buses, and each bus waits for both.
 */
export async function connected(...pairs: Array<[ProcessBus, ReturnType<typeof listen>]>) {
  for (const [connecting] of pairs) await connecting.publish(BUS_TOPICS.session, 'connecting');
  await pairs[0]![0].publish(BUS_TOPICS.session, 'connected');
  await pairs.at(-1)![0].publish(BUS_TOPICS.session, 'connected-too');
  for (const [, listener] of pairs) {
    await listener.until('session:connected');
    await listener.until('session:connected-too');
  }
  for (const [, listener] of pairs) listener.heard.length = 0;
}

/**
 * Worker buses started (listenForWork): waits until one holds the work turn, which it gets
 * asynchronously and announces to its own subscribers (an action-runs signal), so that what a test
 * counts as heard starts after that.
 */
export async function turnTaken(...workers: ProcessBus[]) {
  await eventually('a worker to hold the work turn', () => (workers.some((bus) => bus.holdsWorkTurn) ? true : undefined));
}
