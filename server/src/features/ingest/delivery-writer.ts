import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { Outcome } from './delivery-pipeline.ts';
import { insertNewDeliveries, updateStoredDelivery, type DeliveryWrite, type WriteResult } from './delivery-store.ts';
import type { Clock } from '../../lib/clock.ts';

const MAX_BATCH = 200;

/**
 * Stores delivery outcomes: the wh-id (replay protection), the delivery row, and for an accepted
 * delivery the action (which is its own run job: the run dispatchers claim it), all in one
 * transaction (for new deliveries, one statement).
 *
 * Ingest writes are group-committed: requests that arrive while earlier transactions run are written
 * together, in one statement whatever their number, with at most `maxInFlight` transactions at once
 * (one on PGlite, whose single connection runs one at a time anyway, so batches grow instead).
 * Nothing is answered before its transaction commits.
 */
export function createDeliveryWriter(deps: {
  db: Kysely<DB>;
  /** New actions were committed: the run dispatchers of every process claim them now. */
  wakeRunners: () => void;
  maxInFlight: number;
  metrics: Pick<Metrics, 'ingestBatchSize' | 'ingestBatchDuration'>;
  clock: Clock;
}) {
  /** Returns each item's result and how many actions (and so runs) were created. */
  async function writeBatch(items: DeliveryWrite[]): Promise<{ results: WriteResult[]; created: number }> {
    const [first] = items;
    const stored = first!.existing
      ? await deps.db.transaction().execute((trx) => updateStoredDelivery(trx, { ...first!, existing: first!.existing! }))
      : await insertNewDeliveries(deps.db, items);
    // (An action's first lifecycle state, queued by this delivery, is the action row itself: the
    // ledger derives it from created_at and delivery_id.)
    return { results: stored.results, created: stored.createdActionIds.length };
  }

  /** An accepted-decision write that failed is kept as a buffered delivery (action_create_failed). */
  async function writeAlone(item: DeliveryWrite): Promise<WriteResult> {
    try {
      const { results, created } = await writeBatch([item]);
      if (created > 0) deps.wakeRunners();
      return results[0]!;
    } catch (error) {
      if (error instanceof AppError || item.decision.status !== 'create') throw error;
      const buffered: DeliveryWrite = {
        ...item,
        decision: { status: 'buffered', reason: 'action_create_failed' },
        nextAttemptAt: new Date(deps.clock.now().getTime() + 60_000),
      };
      return (await writeBatch([buffered])).results[0]!;
    }
  }

  const pending: Array<{ item: DeliveryWrite; resolve: (result: WriteResult) => void; reject: (error: unknown) => void }> = [];
  let inFlight = 0;
  let scheduled = false;
  let drained: (() => void) | undefined;

  // A flush waits for the next turn of the event loop, so that every request already being handled
  // joins the batch (PGlite runs statements synchronously; flushing at once would write them singly).
  function scheduleFlush(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flush();
    });
  }

  function flush(): void {
    if (inFlight >= deps.maxInFlight || pending.length === 0) return;
    const batch = pending.splice(0, MAX_BATCH);
    inFlight++;
    deps.metrics.ingestBatchSize.observe(batch.length);
    const endTimer = deps.metrics.ingestBatchDuration.startTimer();
    writeBatch(batch.map(({ item }) => item))
      .then(
        ({ results, created }) => {
          if (created > 0) deps.wakeRunners();
          for (const [index, entry] of batch.entries()) entry.resolve(results[index]!);
        },
        // One bad item must not fail the others: write each alone.
        () => Promise.all(batch.map((entry) => writeAlone(entry.item).then(entry.resolve, entry.reject))),
      )
      .finally(() => {
        endTimer();
        inFlight--;
        if (inFlight === 0 && pending.length === 0) drained?.();
        scheduleFlush();
      });
  }

  const unwrap = (result: WriteResult): Outcome => {
    if (result instanceof AppError) throw result;
    return result;
  };

  return {
    /** Batched with concurrent writes (the ingest path). */
    write(item: DeliveryWrite): Promise<Outcome> {
      return new Promise<WriteResult>((resolve, reject) => {
        pending.push({ item, resolve, reject });
        scheduleFlush();
      }).then(unwrap);
    },

    /** Resolves once every accepted write is committed (shutdown waits for it before closing the database). */
    drain(): Promise<void> {
      if (inFlight === 0 && pending.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => (drained = resolve));
    },

    /** Written at once, alone (retries, replays, Send Test). */
    writeNow: (item: DeliveryWrite): Promise<Outcome> => writeAlone(item).then(unwrap),
  };
}

export type DeliveryWriter = ReturnType<typeof createDeliveryWriter>;
