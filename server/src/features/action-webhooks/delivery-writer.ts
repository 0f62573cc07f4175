import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { AppError } from '../../lib/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { Decision, Ingress, Outcome } from './delivery-pipeline.ts';
import { requestToolApprovals } from './payload.ts';

/** One delivery outcome to store; `existing` for a stored row being retried or replayed. */
export interface DeliveryWrite {
  ingress: Ingress;
  decision: Decision;
  nextAttemptAt: Date | null;
  existing?: { expectedAttempts: number; attempts: number };
}

type Result = Outcome | AppError;

const MAX_BATCH = 200;

/** How many of the results created an action (and so enqueued its run). */
const createdActions = (results: Result[]) => results.filter((result) => !(result instanceof AppError) && result.status === 'accepted' && !result.alreadyExists).length;

/**
 * Stores delivery outcomes: the wh-id (replay protection), the delivery row, and for an accepted
 * delivery the action and its job, all in one transaction.
 *
 * Ingest writes are group-committed: requests that arrive while earlier transactions run are written
 * together, in a handful of multi-row statements, with at most `maxInFlight` transactions at once
 * (one on PGlite, whose single connection runs one at a time anyway, so batches grow instead).
 * Nothing is answered before its transaction commits. Idempotency and replays are decided by the
 * database (ON CONFLICT), so they hold across batches and processes as within one batch.
 */
export function createDeliveryWriter(deps: { db: Kysely<DB>; jobs: Pick<JobRunner, 'enqueueMany' | 'notify'>; maxInFlight: number; metrics: Pick<Metrics, 'ingestBatchSize' | 'ingestBatchDuration'> }) {
  async function writeBatch(items: DeliveryWrite[]): Promise<Result[]> {
    return deps.db.transaction().execute(async (trx) => {
      const results: Array<Result | undefined> = items.map(() => undefined);

      // 1. wh-ids: the first claim of a (webhook, id) wins; any other, in this batch or before, is a replay.
      const claims = items.map((item, index) => ({ index, webhookId: item.ingress.webhook.id, messageId: item.existing ? undefined : item.ingress.messageId }))
        .filter((claim): claim is { index: number; webhookId: string; messageId: string } => claim.messageId !== undefined);
      if (claims.length > 0) {
        const inserted = await trx.insertInto('webhookMessageIds')
          .values(claims.map(({ webhookId, messageId }) => ({ webhookId, messageId })))
          .onConflict((oc) => oc.doNothing())
          .returning(['webhookId', 'messageId'])
          .execute();
        const fresh = new Set(inserted.map((row) => `${row.webhookId} ${row.messageId}`));
        for (const claim of claims) {
          const key = `${claim.webhookId} ${claim.messageId}`;
          if (fresh.delete(key)) continue;
          results[claim.index] = new AppError('message_replayed', 'This wh-id was already received within the last 5 minutes');
        }
      }

      // 2. Actions, idempotent on (webhook, externalId): a conflict means the action exists already.
      const creating = items.map((item, index) => ({ item, index, id: crypto.randomUUID() })).filter(({ item, index }) => results[index] === undefined && item.decision.status === 'create');
      const createdIds = new Set<string>();
      const actionIdOf = new Map<number, string>();
      // The items whose own row was inserted. A duplicate of an earlier item of the same batch gets
      // that item's id, but is not its creator.
      const creators = new Set<number>();
      if (creating.length > 0) {
        const inserted = await trx.insertInto('actions')
          .values(creating.map(({ item, id }) => {
            const { webhook, payload, eventId } = item.ingress;
            const decision = item.decision as Extract<Decision, { status: 'create' }>;
            return {
              id, orgId: webhook.orgId, webhookId: webhook.id, deliveryId: eventId, agentId: decision.agentId, actionRuleId: decision.actionRuleId,
              runAsUserId: decision.runAsUserId, status: 'queued', eventType: payload.eventType, externalId: payload.externalId ?? null,
              instructions: decision.instructions, data: JSON.stringify(payload.data ?? {}), toolApprovals: JSON.stringify(requestToolApprovals(payload, webhook.allowRequestOverrides)),
            };
          }))
          .onConflict((oc) => oc.columns(['webhookId', 'externalId']).where('externalId', 'is not', null).doNothing())
          .returning('id')
          .execute();
        for (const row of inserted) createdIds.add(row.id);
        const conflicted = creating.filter(({ id }) => !createdIds.has(id));
        if (conflicted.length > 0) {
          const existing = await trx.selectFrom('actions').select(['id', 'webhookId', 'externalId'])
            .where((eb) => eb.or(conflicted.map(({ item }) => eb.and([eb('webhookId', '=', item.ingress.webhook.id), eb('externalId', '=', item.ingress.payload.externalId!)]))))
            .execute();
          const byKey = new Map(existing.map((row) => [`${row.webhookId} ${row.externalId}`, row.id]));
          for (const { item, index } of conflicted) actionIdOf.set(index, byKey.get(`${item.ingress.webhook.id} ${item.ingress.payload.externalId}`)!);
        }
        for (const { index, id } of creating) {
          if (!createdIds.has(id)) continue;
          actionIdOf.set(index, id);
          creators.add(index);
        }
      }

      // 3. Delivery rows: new ones inserted (except a duplicate's, which adds nothing), stored ones updated.
      const newRows = [];
      for (const [index, item] of items.entries()) {
        if (results[index] !== undefined) continue;
        const { ingress, decision } = item;
        const actionId = actionIdOf.get(index) ?? null;
        const alreadyExists = actionId !== null && !creators.has(index);
        const status = decision.status === 'create' ? ('accepted' as const) : decision.status;
        const reason = decision.status === 'create' ? null : decision.reason;
        results[index] = actionId
          ? { status: 'accepted', eventId: ingress.eventId, actionId, alreadyExists }
          : { status: status as 'buffered' | 'skipped', eventId: ingress.eventId, reason: reason! };
        const changes = { status, reason, actionId, nextAttemptAt: status === 'buffered' ? item.nextAttemptAt : null };
        if (item.existing) {
          const updated = await trx.updateTable('webhookDeliveries').set({ ...changes, attempts: item.existing.attempts, updatedAt: new Date() })
            .where('id', '=', ingress.eventId).where('attempts', '=', item.existing.expectedAttempts).executeTakeFirst();
          // Claims the row: a retry and a replay of one delivery cannot both write (and both create an action).
          if (updated.numUpdatedRows === 0n) throw new AppError('conflict', 'This delivery is being processed right now');
        } else if (!alreadyExists) {
          newRows.push({
            id: ingress.eventId, orgId: ingress.webhook.orgId, webhookId: ingress.webhook.id, ...changes,
            eventType: ingress.payload.eventType, externalId: ingress.payload.externalId ?? null, payload: JSON.stringify(ingress.payload),
            rawBody: ingress.rawBody, headers: JSON.stringify(ingress.headers), verificationScheme: ingress.webhook.verificationScheme,
            sourceIp: ingress.sourceIp, messageId: ingress.messageId ?? null,
          });
        }
      }
      if (newRows.length > 0) await trx.insertInto('webhookDeliveries').values(newRows).execute();

      // 4. The job of every new action. (Its first lifecycle state, queued by this delivery, is the
      // action row itself: the ledger derives it from created_at and delivery_id.)
      const created = creating.filter(({ id }) => createdIds.has(id));
      if (created.length > 0) await deps.jobs.enqueueMany('actions.run', created.map(({ id }) => ({ actionId: id })), { trx });
      return results as Result[];
    });
  }

  /** An accepted-decision write that failed is kept as a buffered delivery (action_create_failed). */
  async function writeAlone(item: DeliveryWrite): Promise<Result> {
    try {
      const result = (await writeBatch([item]))[0]!;
      deps.jobs.notify('actions.run', createdActions([result]));
      return result;
    } catch (error) {
      if (error instanceof AppError || item.decision.status !== 'create') throw error;
      const buffered: DeliveryWrite = { ...item, decision: { status: 'buffered', reason: 'action_create_failed' }, nextAttemptAt: new Date(Date.now() + 60_000) };
      return (await writeBatch([buffered]))[0]!;
    }
  }

  const pending: Array<{ item: DeliveryWrite; resolve: (result: Result) => void; reject: (error: unknown) => void }> = [];
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
        (results) => {
          deps.jobs.notify('actions.run', createdActions(results));
          batch.forEach((entry, index) => entry.resolve(results[index]!));
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

  const unwrap = (result: Result): Outcome => {
    if (result instanceof AppError) throw result;
    return result;
  };

  return {
    /** Batched with concurrent writes (the ingest path). */
    write(item: DeliveryWrite): Promise<Outcome> {
      return new Promise<Result>((resolve, reject) => {
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
