import { sql, type Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';

/** Work waiting and leases held, across the whole deployment (every process reads the same rows). */
export const opsRepo = {
  /** Pending callbacks: due now (being sent or waiting for a slot) and waiting for a retry; from the due index. */
  callbackBacklog: async (db: Kysely<DB>) => {
    const row = await db
      .selectFrom('callbackDeliveries')
      .where('status', '=', 'pending')
      .select([
        sql<string>`count(*) filter (where next_attempt_at <= now())`.as('due'),
        sql<string>`count(*) filter (where next_attempt_at > now())`.as('scheduled'),
        sql<number | null>`extract(epoch from now() - min(next_attempt_at))`.as('oldestDueSeconds'),
      ])
      .executeTakeFirstOrThrow();
    return {
      due: Number(row.due),
      scheduled: Number(row.scheduled),
      oldestDueSeconds: Math.max(0, Number(row.oldestDueSeconds ?? 0)),
    };
  },

  /** Actions waiting for a runner (the run queue is the actions table): queued, approved, and the oldest one's wait. */
  runQueue: async (db: Kysely<DB>) => {
    const row = await db
      .selectFrom('actions')
      .where('status', 'in', ['queued', 'approved'])
      .select([
        sql<string>`count(*) filter (where status = 'queued')`.as('queued'),
        sql<string>`count(*) filter (where status = 'approved')`.as('approved'),
        sql<number | null>`extract(epoch from now() - min(updated_at))`.as('oldestSeconds'),
      ])
      .executeTakeFirstOrThrow();
    return {
      queued: Number(row.queued),
      approved: Number(row.approved),
      oldestSeconds: Math.max(0, Number(row.oldestSeconds ?? 0)),
    };
  },

  /**
   * Mail notifications waiting for a worker (they are their own queue): ready now (new, or their
   * holder died), and waiting for a retry's time; and how long the longest-ready one has waited.
   */
  notificationQueue: async (db: Kysely<DB>) => {
    const ready = sql`greatest(lease_expires_at, retry_at, received_at)`;
    const row = await db
      .selectFrom('emailNotifications')
      .where('status', '=', 'received')
      .select([
        sql<string>`count(*) filter (where ${ready} <= now())`.as('ready'),
        sql<string>`count(*) filter (where lease_expires_at is null and retry_at > now())`.as('retrying'),
        sql<number | null>`extract(epoch from now() - min(${ready}) filter (where ${ready} <= now()))`.as('oldestSeconds'),
      ])
      .executeTakeFirstOrThrow();
    return {
      ready: Number(row.ready),
      retrying: Number(row.retrying),
      oldestSeconds: Math.max(0, Number(row.oldestSeconds ?? 0)),
    };
  },

  /** Leases on running actions and on email notifications being processed: held, and lapsed but not yet taken over. */
  leases: async (db: Kysely<DB>) => {
    const count = (name: string, lapsed: boolean) =>
      sql<string>`count(*) filter (where lease_expires_at ${sql.raw(lapsed ? '<=' : '>')} now())`.as(name);
    const [actions, notifications] = await Promise.all([
      db
        .selectFrom('actions')
        .where('status', '=', 'running')
        .select([count('held', false), count('lapsed', true)])
        .executeTakeFirstOrThrow(),
      db
        .selectFrom('emailNotifications')
        .where('status', '=', 'received')
        .select([count('held', false), count('lapsed', true)])
        .executeTakeFirstOrThrow(),
    ]);
    return {
      action_run: { held: Number(actions.held), lapsed: Number(actions.lapsed) },
      email_notification: { held: Number(notifications.held), lapsed: Number(notifications.lapsed) },
    };
  },
};
