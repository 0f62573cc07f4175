import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { JobMeta } from '../../jobs/registry.ts';
import { jobQueues } from '../../jobs/registry.ts';
import type { Clock } from '../../lib/clock.ts';
import type { DeliveryEvents } from './delivery-events.service.ts';
import type { InboundEmail } from './inbound.service.ts';
import { notificationSchema } from './notification-payload.ts';
import { notificationsRepo } from './notifications.repo.ts';

const LAST_RETRY = jobQueues['email.process'].options.retryLimit;

/**
 * Processes stored notifications, each under a lease that it renews: a worker that dies leaves a
 * lapsing lease, and recovery hands the notification to a live worker. Whatever a notification
 * writes commits with its end, so processing it again after a crash does nothing twice.
 */
export function createNotificationProcessor(deps: {
  db: Kysely<DB>;
  inbound: InboundEmail;
  deliveryEvents: DeliveryEvents;
  jobs: Pick<JobRunner, 'enqueue'>;
  leaseMs: number;
  clock: Clock;
  logger: Logger;
}) {
  const { db } = deps;

  return {
    async process(notificationId: string, meta: Pick<JobMeta, 'retryCount' | 'onHandBack'>): Promise<void> {
      const notification = await notificationsRepo.claim(db, notificationId, deps.leaseMs);
      if (!notification) return;
      const renew = setInterval(
        () => {
          notificationsRepo
            .renewLease(db, notificationId, deps.leaseMs)
            .catch((error) => deps.logger.warn({ err: error, notificationId }, 'could not renew a notification lease'));
        },
        Math.max(100, deps.leaseMs / 3),
      );
      renew.unref();
      // This process stops before the notification is done: its job's retry (in any process) takes
      // it over at once instead of after the lease. What this run may still write is stored once
      // (unique email, settle-first events), and its failure is not recorded over the new holder.
      let handedBack = false;
      meta.onHandBack(async () => {
        handedBack = true;
        clearInterval(renew);
        await notificationsRepo.releaseLease(db, notificationId);
      });
      const lastAttempt = meta.retryCount >= LAST_RETRY;
      try {
        const payload = notificationSchema.parse(notification.payload);
        if (payload.type === 'email.received') await deps.inbound.receive(notification, payload, { lastAttempt });
        else await deps.deliveryEvents.record(notification, payload);
      } catch (error) {
        if (handedBack) throw error;
        const message = error instanceof Error ? error.message : String(error);
        deps.logger.warn({ err: error, notificationId, lastAttempt }, 'a mail notification could not be processed');
        await notificationsRepo.settle(db, notificationId, {
          status: lastAttempt ? 'failed' : 'received',
          reason: lastAttempt ? `gave up after ${meta.retryCount + 1} attempts` : null,
          lastError: message.slice(0, 2000),
        });
        if (!lastAttempt) throw error;
      } finally {
        clearInterval(renew);
      }
    },

    /**
     * Gives unfinished notifications to a worker: at start, all of them (a stopped process may
     * have held some; each is taken once its lease lapses), and every minute, those older than a
     * minute whose job was lost (then it also forgets ignored notifications of no org after a week).
     */
    async recover(options: { atStart: boolean }): Promise<number> {
      if (!options.atStart) await notificationsRepo.purgeUnattributed(db, 7);
      const rows = await notificationsRepo.unfinished(db, { olderThanMs: options.atStart ? 0 : 60_000, limit: 1000 });
      for (const row of rows) {
        const startAfter = row.lapsesInMs > 0 ? new Date(deps.clock.now().getTime() + row.lapsesInMs + 50) : undefined;
        await deps.jobs.enqueue('email.process', { notificationId: row.id }, { startAfter });
      }
      return rows.length;
    },
  };
}

export type NotificationProcessor = ReturnType<typeof createNotificationProcessor>;
