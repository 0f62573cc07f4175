import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { EmailNotificationRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { createSlotPump } from '../../lib/slot-pump.ts';
import type { DeliveryEvents } from './delivery-events.service.ts';
import type { InboundEmail } from './inbound.service.ts';
import { notificationSchema } from './notification-payload.ts';
import { notificationsRepo } from './notifications.repo.ts';

/**
 * A failed attempt (a fetch from the provider, a download) is retried within seconds, then minutes,
 * well inside the hour that a received email's attachment links last: 2 s doubling, the 10th retry
 * about 34 minutes after the first attempt. The 11th attempt is the last, and fails for good.
 */
const NOTIFICATION_RETRIES = 10;
const FIRST_RETRY_MS = 2_000;

/** The backoff after attempt `attempts` (1 for the first) failed. */
const retryDelayMs = (attempts: number) => FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1);

/**
 * Processes the stored notifications in this process, up to `concurrency` at once: as many as it has
 * free slots for are claimed from the notifications table in one statement (lib/slot-pump.ts), when
 * woken (the intake committed some, in this process or, by the bus, another) or at its poll. Each is
 * held under a lease that it renews: a worker that dies leaves a lapsing lease, and a later claim
 * takes it over. Whatever a notification writes commits with its end, so processing it again after a
 * crash does nothing twice.
 */
export function createNotificationProcessor(deps: {
  db: Kysely<DB>;
  inbound: InboundEmail;
  deliveryEvents: DeliveryEvents;
  leaseMs: number;
  concurrency: number;
  /** How often an idle processor looks for notifications nobody woke it for (a retry's time, a lapsed lease, a lost wake-up). */
  pollMs: number;
  /**
   * How long a wake-up waits before it claims, so that the notifications of that moment are claimed
   * and processed together (lib/slot-pump.ts: gatherMs).
   */
  batchWindowMs: number;
  metrics: Pick<Metrics, 'jobs' | 'jobDuration'>;
  logger: Logger;
}) {
  const { db } = deps;
  /** Notifications given back while still processing (the process is stopping): their outcome is no longer theirs to record. */
  const handedBack = new Set<string>();

  async function handle(notification: EmailNotificationRow): Promise<void> {
    const { id } = notification;
    const begun = performance.now();
    const renew = setInterval(
      () => {
        if (handedBack.has(id)) return clearInterval(renew);
        notificationsRepo
          .renewLease(db, id, deps.leaseMs)
          .catch((error) => deps.logger.warn({ err: error, notificationId: id }, 'could not renew a notification lease'));
      },
      Math.max(100, deps.leaseMs / 3),
    );
    renew.unref();
    const lastAttempt = notification.attempts > NOTIFICATION_RETRIES;
    try {
      const payload = notificationSchema.parse(notification.payload);
      if (payload.type === 'email.received') await deps.inbound.receive(notification, payload, { lastAttempt });
      else await deps.deliveryEvents.record(notification, payload);
      deps.metrics.jobs.inc({ queue: 'email.process', outcome: 'completed' });
    } catch (error) {
      deps.metrics.jobs.inc({ queue: 'email.process', outcome: 'failed' });
      // Given back while it ran: another worker may hold it now, and this failure is not recorded over it.
      if (handedBack.has(id)) return;
      const message = error instanceof Error ? error.message : String(error);
      deps.logger.warn({ err: error, notificationId: id, lastAttempt }, 'a mail notification could not be processed');
      await notificationsRepo
        .settle(db, id, {
          status: lastAttempt ? 'failed' : 'received',
          reason: lastAttempt ? `gave up after ${notification.attempts} attempts` : null,
          lastError: message.slice(0, 2000),
          retryInMs: lastAttempt ? undefined : retryDelayMs(notification.attempts),
        })
        // Unrecorded, the failure still ends in a retry: the lease lapses and a later claim takes it.
        .catch((failure) => deps.logger.error({ err: failure, notificationId: id }, 'could not record a notification failure'));
    } finally {
      clearInterval(renew);
      handedBack.delete(id);
      deps.metrics.jobDuration.observe({ queue: 'email.process' }, (performance.now() - begun) / 1000);
    }
  }

  const slots = createSlotPump({
    concurrency: deps.concurrency,
    pollMs: deps.pollMs,
    gatherMs: deps.batchWindowMs,
    take: (free) => notificationsRepo.claimReady(db, free, deps.leaseMs),
    run: handle,
    onTakeError: (error) => deps.logger.error({ err: error }, 'could not claim mail notifications'),
  });

  return {
    /** Claim now: notifications were committed (called for this process's and, by the bus, other processes' commits). */
    wake: slots.wake,
    start: slots.start,

    /**
     * Claims nothing more; waits up to `timeoutMs` for the notifications being processed, then gives
     * the rest back at once (their leases released), so that a worker of another process takes them
     * now rather than when their leases lapse. What such a run may still write is stored once (unique
     * email, settle-first events).
     */
    async stop(timeoutMs: number): Promise<void> {
      const unfinished = await slots.stop(timeoutMs);
      for (const notification of unfinished) handedBack.add(notification.id);
      const released = await Promise.allSettled(unfinished.map((row) => notificationsRepo.releaseLease(db, row.id)));
      for (const outcome of released)
        if (outcome.status === 'rejected')
          deps.logger.warn({ err: outcome.reason }, 'could not give back a notification lease; it lapses instead');
    },

    /** Forgets notifications that named no org (anyone can post those) after a week; every minute. */
    purgeUnattributed: () => notificationsRepo.purgeUnattributed(db, 7),
  };
}

export type NotificationProcessor = ReturnType<typeof createNotificationProcessor>;
