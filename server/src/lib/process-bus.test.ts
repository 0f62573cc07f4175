import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUrl } from '../../test/helpers/test-database.ts';
import { BUS_TOPICS, createProcessBus, type ProcessBus } from './process-bus.ts';

const onPostgres = process.env.TEST_DB === 'postgres';

/** What a bus's subscribers heard, in order, and a way to wait for a message; `takes`: its signals' work is taken here. */
function listen(bus: ProcessBus, takes = false) {
  const heard: string[] = [];
  for (const topic of [BUS_TOPICS.callbacks, BUS_TOPICS.actionRuns, BUS_TOPICS.session])
    bus.subscribe(topic, (key) => {
      heard.push(`${topic}:${key}`);
      return takes;
    });
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

  /**
   * A bus listens once it has connected, and its own publish waits for that: a NOTIFY sent before
   * would never reach it. Once each has heard one sent after all connected, nothing earlier is on its
   * way (a connection receives notifications in commit order), and each starts from nothing.
   */
  async function connected(...pairs: Array<[ProcessBus, ReturnType<typeof listen>]>) {
    for (const [connecting] of pairs) await connecting.publish(BUS_TOPICS.session, 'connecting');
    await pairs[0]![0].publish(BUS_TOPICS.session, 'connected');
    for (const [, listener] of pairs) await listener.until('session:connected');
    for (const [, listener] of pairs) listener.heard.length = 0;
  }

  it('signals reach the processes that run workers; invalidations reach every process', async () => {
    const serve = bus();
    const worker = bus();
    const servingOnlyBus = bus();
    const servingOnly = listen(servingOnlyBus);
    const working = listen(worker);
    await worker.listenForWork();
    const local = listen(serve);
    await connected([serve, local], [worker, working], [servingOnlyBus, servingOnly]);

    serve.signal(BUS_TOPICS.actionRuns);
    await serve.publish(BUS_TOPICS.session, 'after-the-signal');
    await working.until('session:after-the-signal');
    await servingOnly.until('session:after-the-signal');

    // Its own process hears a signal at once; a worker's process by the database; a serve-only one not at all.
    expect(local.heard).toEqual(['action-runs:', 'session:after-the-signal']);
    expect(working.heard).toEqual(['action-runs:', 'session:after-the-signal']);
    expect(servingOnly.heard).toEqual(['session:after-the-signal']);
  });

  it('a signal whose work a subscriber here takes wakes no other process', async () => {
    const [taking, busy, other] = [bus(), bus(), bus()];
    const takingHeard = listen(taking, true);
    const busyHeard = listen(busy, false);
    const otherHeard = listen(other);
    for (const worker of [taking, busy, other]) await worker.listenForWork();
    await connected([taking, takingHeard], [busy, busyHeard], [other, otherHeard]);

    taking.signal(BUS_TOPICS.callbacks);
    busy.signal(BUS_TOPICS.actionRuns);
    await taking.publish(BUS_TOPICS.session, 'after');
    await busy.publish(BUS_TOPICS.session, 'after-busy');
    for (const listener of [takingHeard, otherHeard]) await listener.until('session:after-busy');

    expect(takingHeard.heard).toEqual(['callbacks:', 'session:after', 'action-runs:', 'session:after-busy']);
    // The busy process took nothing, so the others were told of its work; of the taken work, nobody.
    expect(otherHeard.heard.toSorted()).toEqual(['action-runs:', 'session:after', 'session:after-busy']);
  });

  it("a serve's NOTIFY goes with the commit of its work: once, and not when it rolls back", async () => {
    const serve = bus();
    const worker = bus();
    const serveHeard = listen(serve);
    const workerHeard = listen(worker);
    await worker.listenForWork();
    await connected([serve, serveHeard], [worker, workerHeard]);
    // A process that runs workers signals after the commit instead: its own may take the work.
    expect(worker.commitNotice(BUS_TOPICS.actionRuns)).toBeUndefined();

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const rolledBack = serve.commitNotice(BUS_TOPICS.actionRuns)!;
      await client.query('begin');
      await client.query('select pg_notify($1, $2)', [rolledBack.channel, rolledBack.payload]);
      await client.query('rollback');
      await serve.publish(BUS_TOPICS.session, 'rolled-back');
      await workerHeard.until('session:rolled-back');
      expect(workerHeard.heard).toEqual(['session:rolled-back']);

      const committed = serve.commitNotice(BUS_TOPICS.actionRuns)!;
      await client.query('begin');
      await client.query('select pg_notify($1, $2)', [committed.channel, committed.payload]);
      await client.query('commit');
      serve.signal(BUS_TOPICS.actionRuns, committed);
      // Signals within the window after a commit's NOTIFY go as one at its end, so no notice is given meanwhile.
      expect(serve.commitNotice(BUS_TOPICS.actionRuns)).toBeUndefined();
      // The bus sends in order: had the signal sent a NOTIFY of its own, it would come before this one.
      await serve.publish(BUS_TOPICS.session, 'committed');
      await workerHeard.until('session:committed');
      expect(workerHeard.heard).toEqual(['session:rolled-back', 'action-runs:', 'session:committed']);
      expect(serveHeard.heard).toEqual(['session:rolled-back', 'action-runs:', 'session:committed']);
    } finally {
      await client.end();
    }
  });
});
