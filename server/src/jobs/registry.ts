import { z } from 'zod';

/**
 * Every job queue with the shape of its payload. Enqueue and work go through these names only, so a
 * payload is validated on both sides and a queue cannot be misspelt.
 */
export const jobQueues = {
  /** Creates a reset token for the email, if such a user exists, and mails the link. */
  'auth.password-reset': {
    payload: z.object({ email: z.string(), requestedAt: z.string() }),
    options: { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: 60 },
  },
  /** Deletes expired sessions and old reset tokens; scheduled hourly. */
  'auth.purge-expired': {
    payload: z.object({}).passthrough(),
    options: { retryLimit: 2, expireInSeconds: 300 },
    cron: '17 * * * *',
  },
} as const satisfies Record<string, { payload: z.ZodType; options: object; cron?: string }>;

export type QueueName = keyof typeof jobQueues;
export type JobPayload<Q extends QueueName> = z.infer<(typeof jobQueues)[Q]['payload']>;
export type JobHandler<Q extends QueueName> = (payload: JobPayload<Q>, meta: { jobId: string; retryCount: number }) => Promise<void>;
export type JobHandlers = { [Q in QueueName]: JobHandler<Q> };
