import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { Outcome } from './delivery-pipeline.ts';
import { insertNewDeliveries, updateStoredDelivery, type DeliveryWrite, type WriteResult } from './delivery-store.ts';
import type { Clock } from '../../lib/clock.ts';
import { createGroupCommit } from '../../lib/group-commit.ts';
import type { CommitNotice } from '../../lib/process-bus.ts';

const MAX_BATCH = 200;

/**
 * Stores delivery outcomes: the wh-id (replay protection), the delivery row, and for an accepted
 * delivery the action (which is its own run job: the run dispatchers claim it), all in one
 * transaction (for new deliveries, one statement).
 *
 * Ingest writes are group-committed (lib/group-commit.ts): requests that arrive while earlier
 * transactions run are written together, in one statement. Nothing is answered before its
 * transaction commits.
 */
export function createDeliveryWriter(deps: {
  db: Kysely<DB>;
  /** New actions were committed: the run dispatchers claim them now (`sent`: their statement told other processes). */
  wakeRunners: (sent?: CommitNotice) => void;
  /** The NOTIFY that tells other processes' run dispatchers, for a statement to send as it commits (ProcessBus.commitNotice). */
  runnersNotice: () => CommitNotice | undefined;
  maxInFlight: number;
  metrics: Pick<Metrics, 'ingestBatchSize' | 'ingestBatchDuration'>;
  clock: Clock;
}) {
  /** Returns each item's result; wakes the run dispatchers when it created actions. */
  async function writeBatch(items: DeliveryWrite[]): Promise<WriteResult[]> {
    const [first] = items;
    const notice = first!.existing ? undefined : deps.runnersNotice();
    const stored = first!.existing
      ? await deps.db.transaction().execute((trx) => updateStoredDelivery(trx, { ...first!, existing: first!.existing! }))
      : await insertNewDeliveries(deps.db, items, notice);
    // (An action's first lifecycle state, queued by this delivery, is the action row itself: the
    // ledger derives it from created_at and delivery_id.)
    if (stored.createdActionIds.length > 0) deps.wakeRunners(notice);
    return stored.results;
  }

  /** An accepted-decision write that failed is kept as a buffered delivery (action_create_failed). */
  async function writeAlone(item: DeliveryWrite): Promise<WriteResult> {
    try {
      return (await writeBatch([item]))[0]!;
    } catch (error) {
      if (error instanceof AppError || item.decision.status !== 'create') throw error;
      const buffered: DeliveryWrite = {
        ...item,
        decision: { status: 'buffered', reason: 'action_create_failed' },
        nextAttemptAt: new Date(deps.clock.now().getTime() + 60_000),
      };
      return (await writeBatch([buffered]))[0]!;
    }
  }

  const commits = createGroupCommit<DeliveryWrite, WriteResult>({
    maxInFlight: deps.maxInFlight,
    maxBatch: MAX_BATCH,
    writeBatch,
    // One bad item must not fail the others: each is written alone.
    writeAlone,
    onBatch: (size) => {
      deps.metrics.ingestBatchSize.observe(size);
      return deps.metrics.ingestBatchDuration.startTimer();
    },
  });

  const unwrap = (result: WriteResult): Outcome => {
    if (result instanceof AppError) throw result;
    return result;
  };

  return {
    /** Batched with concurrent writes (the ingest path). */
    write: (item: DeliveryWrite): Promise<Outcome> => commits.write(item).then(unwrap),

    /** Resolves once every accepted write is committed (shutdown waits for it before closing the database). */
    drain: (): Promise<void> => commits.drain(),

    /** Written at once, alone (retries, replays, Send Test). */
    writeNow: (item: DeliveryWrite): Promise<Outcome> => writeAlone(item).then(unwrap),
  };
}

export type DeliveryWriter = ReturnType<typeof createDeliveryWriter>;
