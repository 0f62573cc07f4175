import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl } from '../../test/helpers/test-database.ts';
import { BUS_TOPICS, createProcessBus, type ProcessBus } from './process-bus.ts';

const onPostgres = process.env.TEST_DB === 'postgres';

/** What a bus's subscribers heard, in order, and a way to wait for a message. */
function listen(bus: ProcessBus) {
  const heard: string[] = [];
  for (const topic of [BUS_TOPICS.callbacks, BUS_TOPICS.actionRuns, BUS_TOPICS.session])
    bus.subscribe(topic, (key) => heard.push(`${topic}:${key}`));
  const until = async (message: string) => {
    for (const deadline = performance.now() + 10_000; !heard.includes(message); ) {
      if (performance.now() > deadline) throw new Error(`never heard ${message}; heard ${heard.join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { heard, until };
}

describe.runIf(onPostgres)('process bus between processes (PostgreSQL)', () => {
  let url: string;
  let drop: () => Promise<void>;
  const buses: ProcessBus[] = [];
  const bus = () => {
    const created = createProcessBus({ postgresUrl: url, logger: pino({ level: 'silent' }) });
    buses.push(created);
    return created;
  };
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabaseUrl());
  });
  afterAll(async () => {
    await Promise.all(buses.map((created) => created.close()));
    await drop?.();
  });

  it('signals reach the processes that run workers; invalidations reach every process', async () => {
    const serve = bus();
    const worker = bus();
    const servingOnlyBus = bus();
    const servingOnly = listen(servingOnlyBus);
    const working = listen(worker);
    await worker.listenForWork();
    const local = listen(serve);
    // A bus listens once it has connected, and its own publish waits for that: a NOTIFY sent before
    // would never reach it. Once each has heard one sent after all connected, nothing earlier is on
    // its way (a connection receives notifications in commit order), and each starts from nothing.
    for (const connecting of [serve, worker, servingOnlyBus]) await connecting.publish(BUS_TOPICS.session, 'connecting');
    await serve.publish(BUS_TOPICS.session, 'connected');
    for (const listener of [servingOnly, working, local]) await listener.until('session:connected');
    for (const listener of [servingOnly, working, local]) listener.heard.length = 0;

    serve.signal(BUS_TOPICS.actionRuns);
    await serve.publish(BUS_TOPICS.session, 'after-the-signal');
    await working.until('session:after-the-signal');
    await servingOnly.until('session:after-the-signal');

    // Its own process hears a signal at once; a worker's process by the database; a serve-only one not at all.
    expect(local.heard).toEqual(['action-runs:', 'session:after-the-signal']);
    expect(working.heard).toEqual(['action-runs:', 'session:after-the-signal']);
    expect(servingOnly.heard).toEqual(['session:after-the-signal']);
  });
});
