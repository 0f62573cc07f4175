import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { busesOnTestDatabase, connected, listen, turnTaken } from '../../test/helpers/bus.ts';
import { BUS_TOPICS } from './process-bus.ts';

const onPostgres = process.env.TEST_DB === 'postgres';

describe.runIf(onPostgres)('process bus between processes (PostgreSQL)', () => {
  const { url, bus } = busesOnTestDatabase();

  it('signals reach the processes that run workers; invalidations reach every process', async () => {
    const serve = bus();
    const worker = bus();
    const servingOnlyBus = bus();
    const servingOnly = listen(servingOnlyBus);
    const working = listen(worker);
    await worker.listenForWork();
    await turnTaken(worker);
    const local = listen(serve);
    await connected([serve, local], [worker, working], [servingOnlyBus, servingOnly]);

    serve.signal(BUS_TOPICS.callbacks);
    await serve.publish(BUS_TOPICS.session, 'after-the-signal');
    await working.until('session:after-the-signal');
    await servingOnly.until('session:after-the-signal');

    // Its own process hears a signal at once; a worker's process by the database; a serve-only one not at all.
    expect(local.heard).toEqual(['callbacks:', 'session:after-the-signal']);
    expect(working.heard).toEqual(['callbacks:', 'session:after-the-signal']);
    expect(servingOnly.heard).toEqual(['session:after-the-signal']);
  });

  it('a signal whose work a subscriber here takes wakes no other process', async () => {
    const [taking, busy, other] = [bus(), bus(), bus()];
    const takingHeard = listen(taking, true);
    const busyHeard = listen(busy, false);
    const otherHeard = listen(other);
    for (const worker of [taking, busy, other]) await worker.listenForWork();
    await turnTaken(taking, busy, other);
    await connected([taking, takingHeard], [busy, busyHeard], [other, otherHeard]);

    taking.signal(BUS_TOPICS.callbacks);
    busy.signal(BUS_TOPICS.callbacks);
    await taking.publish(BUS_TOPICS.session, 'after');
    await busy.publish(BUS_TOPICS.session, 'after-busy');
    for (const listener of [takingHeard, otherHeard]) await listener.until('session:after-busy');

    expect(takingHeard.heard).toEqual(['callbacks:', 'session:after', 'callbacks:', 'session:after-busy']);
    // The busy process took nothing, so the others were told of its work; of the taken work, nobody.
    expect(otherHeard.heard.toSorted()).toEqual(['callbacks:', 'session:after', 'session:after-busy']);
  });

  it('a signal held in its window is sent when the bus closes, not lost with it', async () => {
    const [stopping, worker, marker] = [bus(), bus(), bus()];
    const workerHeard = listen(worker);
    await worker.listenForWork();
    await turnTaken(worker);
    await connected([stopping, listen(stopping)], [worker, workerHeard], [marker, listen(marker)]);

    // A signal whose NOTIFY went with its commit opens a window; a signal within it waits for the window's end.
    const committed = stopping.commitNotice(BUS_TOPICS.callbacks)!;
    const client = new pg.Client({ connectionString: url() });
    await client.connect();
    try {
      await client.query('select pg_notify($1, $2)', [committed.channel, committed.payload]);
    } finally {
      await client.end();
    }
    stopping.signal(BUS_TOPICS.callbacks, committed);
    stopping.signal(BUS_TOPICS.callbacks);
    // Closed within the window: the held signal goes before the close ends.
    await stopping.close();
    await marker.publish(BUS_TOPICS.session, 'after-the-close');
    await workerHeard.until('session:after-the-close');
    expect(workerHeard.heard).toEqual(['callbacks:', 'callbacks:', 'session:after-the-close']);
  });

  it("a serve's NOTIFY goes with the commit of its work: once, and not when it rolls back", async () => {
    const serve = bus();
    const worker = bus();
    const serveHeard = listen(serve);
    const workerHeard = listen(worker);
    await worker.listenForWork();
    await turnTaken(worker);
    await connected([serve, serveHeard], [worker, workerHeard]);
    // A process that runs workers signals after the commit instead: its own may take the work.
    expect(worker.commitNotice(BUS_TOPICS.callbacks)).toBeUndefined();

    const client = new pg.Client({ connectionString: url() });
    await client.connect();
    try {
      const rolledBack = serve.commitNotice(BUS_TOPICS.callbacks)!;
      await client.query('begin');
      await client.query('select pg_notify($1, $2)', [rolledBack.channel, rolledBack.payload]);
      await client.query('rollback');
      await serve.publish(BUS_TOPICS.session, 'rolled-back');
      await workerHeard.until('session:rolled-back');
      expect(workerHeard.heard).toEqual(['session:rolled-back']);

      const committed = serve.commitNotice(BUS_TOPICS.callbacks)!;
      await client.query('begin');
      await client.query('select pg_notify($1, $2)', [committed.channel, committed.payload]);
      await client.query('commit');
      serve.signal(BUS_TOPICS.callbacks, committed);
      // Signals within the window after a commit's NOTIFY go as one at its end, so no notice is given meanwhile.
      expect(serve.commitNotice(BUS_TOPICS.callbacks)).toBeUndefined();
      // The bus sends in order: had the signal sent a NOTIFY of its own, it would come before this one.
      await serve.publish(BUS_TOPICS.session, 'committed');
      await workerHeard.until('session:committed');
      expect(workerHeard.heard).toEqual(['session:rolled-back', 'callbacks:', 'session:committed']);
      expect(serveHeard.heard).toEqual(['session:rolled-back', 'callbacks:', 'session:committed']);
    } finally {
      await client.end();
    }
  });
});
