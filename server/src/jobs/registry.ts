import type { QueueOptions } from 'pg-boss';
import { z } from 'zod';
import type { JobClaim } from './queue-pump.ts';

/**
 * Every job queue with the shape of its payload. Enqueue and work go through these names only, so a
 * payload is validated on both sides and a queue cannot be misspelt.
 */
export const jobQueues = {
  /** Creates a reset token for the email, if such a user exists, and mails the link. */
  'auth.password-reset': {
    payload: z.object({ email: z.string(), requestedAt: z.string() }),
    // Someone is waiting for this mail: the first retry comes after 2-4 s, then backing off.
    options: { retryLimit: 6, retryDelay: 2, retryBackoff: true, expireInSeconds: 60 },
  },
  /** Deletes expired sessions and old reset tokens; scheduled hourly. */
  'auth.purge-expired': {
    payload: z.object({}).passthrough(),
    options: { retryLimit: 2, expireInSeconds: 300 },
    cron: '17 * * * *',
  },
  /** Expires a staged tool call that nobody decided by its deadline (scheduled for that moment). */
  'approvals.expire': {
    payload: z.object({ toolCallRowId: z.uuid() }),
    options: { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: 60 },
  },
  /**
   * Tells the approvers of an action's waiting calls (its rule notifies by email, in Slack); enqueued with
   * the wait. One job of an action at a time: another would take its sends in flight for sends cut off.
   */
  'approvals.notify': {
    payload: z.object({ actionId: z.uuid() }),
    options: { retryLimit: 8, retryDelay: 5, retryBackoff: true, expireInSeconds: 300 },
    oneAtATimePer: 'actionId',
  },
  /**
   * Shows a decision (on any channel) in the Slack messages of its action: who decided, how; buttons gone.
   * One job of an action at a time: an update read before another's decision would overwrite it in Slack.
   */
  'approvals.slack-update': {
    payload: z.object({ actionId: z.uuid() }),
    options: { retryLimit: 5, retryDelay: 2, retryBackoff: true, expireInSeconds: 120 },
    oneAtATimePer: 'actionId',
  },
  /** Reads a reply to an approval email as a decision (the inbound path stored it and enqueued this). */
  'approvals.reply': {
    payload: z.object({ messageRowId: z.uuid() }),
    options: { retryLimit: 8, retryDelay: 5, retryBackoff: true, expireInSeconds: 300 },
  },
  /** Retries buffered webhook deliveries that are due, then forgets message ids past their retention; every minute. */
  'webhooks.retry-buffered': {
    payload: z.object({}).passthrough(),
    options: { retryLimit: 1, expireInSeconds: 300 },
    cron: '* * * * *',
  },
  /** Asks the provider for the Message-ID it gave a sent email (replies may quote only that one); retried until it knows. */
  'email.lookup-message-id': {
    payload: z.object({ messageRowId: z.uuid() }),
    options: { retryLimit: 6, retryDelay: 3, retryBackoff: true, expireInSeconds: 120 },
  },
  /**
   * Sends again a sendEmail message the provider did not take at once (with the call's idempotency key);
   * first 5 s after that try, then backing off over some 20 minutes; the last attempt ends it failed.
   */
  'email.send-again': {
    payload: z.object({ messageRowId: z.uuid() }),
    options: { retryLimit: 8, retryDelay: 5, retryBackoff: true, expireInSeconds: 120 },
  },
  /**
   * Ends failed the sendEmail messages still `sending` an hour after they last changed with no
   * `email.send-again` job left to send them (it could not be queued, or its last attempt died with
   * its worker): the thread shows why instead of `sending` for ever; every ten minutes.
   */
  'email.settle-abandoned-sends': {
    payload: z.object({}).passthrough(),
    options: { retryLimit: 1, expireInSeconds: 300 },
    cron: '*/10 * * * *',
  },
  /**
   * Forgets the mail notifications that named no org after a week; every minute. (The notifications
   * themselves are no jobs: the workers claim them from their table, features/email/notification-processor.ts.)
   */
  'email.purge-unattributed': {
    payload: z.object({}).passthrough(),
    options: { retryLimit: 1, expireInSeconds: 300 },
    cron: '* * * * *',
  },
  /**
   * Forgets job leases lapsed over an hour ago (their holders died; a lapsed lease holds nothing back,
   * and `/metrics` counts it while its job is unfinished); hourly.
   */
  'jobs.purge-lapsed-leases': {
    payload: z.object({}).passthrough(),
    options: { retryLimit: 1, expireInSeconds: 300 },
    cron: '41 * * * *',
  },
} as const satisfies Record<
  string,
  {
    payload: z.ZodType;
    /** pg-boss's options for the queue (every job is also sent with the deployment's heartbeat: job-runner.ts). */
    options: QueueOptions & { expireInSeconds: number };
    cron?: string;
    /** A field of the payload: jobs of the queue with the same value never run at once, in any process (job-leases.repo.ts). */
    oneAtATimePer?: string;
  }
>;

export type QueueName = keyof typeof jobQueues;
export type JobPayload<Q extends QueueName> = z.infer<(typeof jobQueues)[Q]['payload']>;
export type JobHandler<Q extends QueueName> = (payload: JobPayload<Q>, meta: JobMeta) => Promise<void>;

/** What a handler is told of its job besides its payload. */
export interface JobMeta extends JobClaim {
  jobId: string;
  retryCount: number;
  /** No retry follows this attempt (its queue's `retryLimit` reached): what it leaves to a retry, it ends now. */
  lastAttempt: boolean;
}
/** A queue without a handler is not worked by this build (its jobs wait for the feature that works them). */
export type JobHandlers = { [Q in QueueName]?: JobHandler<Q> };
