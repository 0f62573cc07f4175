import { sql, type Kysely } from 'kysely';
import type { EmailNotificationRow, EmailNotificationStatus } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';

/** An org that may have sent a notification, with the secret that proves it. */
export interface CandidateOrg {
  orgId: string;
  webhookSecretEncrypted: string;
}

/** The provider's notifications: stored once per (org, svix-id) before they are answered, then processed by a job. */
export const notificationsRepo = {
  /** The orgs with an inbox at one of these addresses (and an integration to verify with). */
  orgsOfInboxes: (db: Kysely<DB>, addresses: string[]): Promise<CandidateOrg[]> =>
    addresses.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('emailInboxes as i')
          .innerJoin('emailIntegrations as x', 'x.orgId', 'i.orgId')
          .select(['x.orgId', 'x.webhookSecretEncrypted'])
          .distinct()
          .where('i.emailAddress', 'in', addresses)
          .execute(),

  /** The org that sent this email (by the provider's id, or by our org tag on it when the id is not stored yet). */
  orgsOfSentEmail: (db: Kysely<DB>, providerEmailId: string, taggedOrgId: string | undefined): Promise<CandidateOrg[]> =>
    db
      .selectFrom('emailIntegrations as x')
      .select(['x.orgId', 'x.webhookSecretEncrypted'])
      .where((eb) =>
        eb.or([
          eb(
            'x.orgId',
            'in',
            eb
              .selectFrom('emailMessages')
              .select('orgId')
              .where('providerEmailId', '=', providerEmailId)
              .where('direction', '=', 'outbound'),
          ),
          ...(taggedOrgId ? [eb('x.orgId', '=', taggedOrgId)] : []),
        ]),
      )
      .execute(),

  /** Stores a verified notification; undefined when this org has it already (the provider retried). */
  insertOnce: (
    db: Kysely<DB>,
    row: {
      id: string;
      orgId: string;
      svixId: string;
      eventType: string;
      payload: string;
      headers: string;
      traceParent: string | null;
    },
  ): Promise<{ id: string } | undefined> =>
    db
      .insertInto('emailNotifications')
      .values({ ...row, status: 'received' })
      .onConflict((oc) => oc.columns(['orgId', 'svixId']).doNothing())
      .returning('id')
      .executeTakeFirst(),

  /** A notification nobody can be found for: kept with its reason (not its payload, which nobody vouched for). */
  insertIgnored: (db: Kysely<DB>, row: { id: string; svixId: string; eventType: string; reason: string; headers: string }) =>
    db
      .insertInto('emailNotifications')
      .values({ ...row, orgId: null, status: 'ignored', processedAt: sql<Date>`now()` })
      .execute(),

  /**
   * Takes a received notification for processing, for `leaseMs` (on the database's clock); undefined
   * when it is finished or another worker holds it.
   */
  claim: (db: Kysely<DB>, id: string, leaseMs: number): Promise<EmailNotificationRow | undefined> =>
    db
      .updateTable('emailNotifications')
      .set({
        leaseExpiresAt: sql<Date>`now() + ${leaseMs}::int * interval '1 millisecond'`,
        attempts: sql<number>`attempts + 1`,
      })
      .where('id', '=', id)
      .where('status', '=', 'received')
      .where((eb) => eb.or([eb('leaseExpiresAt', 'is', null), eb('leaseExpiresAt', '<=', sql<Date>`now()`)]))
      .returningAll()
      .executeTakeFirst(),

  renewLease: (db: Kysely<DB>, id: string, leaseMs: number) =>
    db
      .updateTable('emailNotifications')
      .set({ leaseExpiresAt: sql<Date>`now() + ${leaseMs}::int * interval '1 millisecond'` })
      .where('id', '=', id)
      .where('status', '=', 'received')
      .execute(),

  /** Gives a lease up at once (its process is stopping): the notification's retry may take it now. */
  releaseLease: (db: Kysely<DB>, id: string) =>
    db
      .updateTable('emailNotifications')
      .set({ leaseExpiresAt: null })
      .where('id', '=', id)
      .where('status', '=', 'received')
      .execute(),

  /** Ends processing: `received` again (to be retried) keeps no lease; the others are final. */
  settle: (
    db: Kysely<DB>,
    id: string,
    outcome: { status: EmailNotificationStatus; reason?: string | null; lastError?: string | null },
  ) =>
    db
      .updateTable('emailNotifications')
      .set({
        status: outcome.status,
        reason: outcome.reason ?? null,
        lastError: outcome.lastError ?? null,
        leaseExpiresAt: null,
        processedAt: outcome.status === 'received' ? null : sql<Date>`now()`,
      })
      .where('id', '=', id)
      .where('status', '=', 'received')
      .execute(),

  /**
   * Received notifications, received over `olderThanMs` ago, that are unfinished: their processor
   * died (a lease, lapsed or lapsing in the ms given) or their job never ran (no attempt). One that
   * failed and waits for its job's retry has neither.
   */
  unfinished: (db: Kysely<DB>, options: { olderThanMs: number; limit: number }) =>
    db
      .selectFrom('emailNotifications')
      .select([
        'id',
        sql<number>`greatest(0, extract(epoch from (coalesce(lease_expires_at, now()) - now())) * 1000)::int`.as('lapsesInMs'),
      ])
      .where('status', '=', 'received')
      .where('receivedAt', '<=', sql<Date>`now() - ${options.olderThanMs}::int * interval '1 millisecond'`)
      .where((eb) => eb.or([eb('leaseExpiresAt', 'is not', null), eb('attempts', '=', 0)]))
      .orderBy('receivedAt')
      .limit(options.limit)
      .execute(),

  idOf: async (db: Kysely<DB>, orgId: string, svixId: string): Promise<string> =>
    (
      await db
        .selectFrom('emailNotifications')
        .select('id')
        .where('orgId', '=', orgId)
        .where('svixId', '=', svixId)
        .executeTakeFirstOrThrow()
    ).id,

  /** Forgets notifications that named no org (anyone can post those) after `days`. */
  purgeUnattributed: async (db: Kysely<DB>, days: number): Promise<number> =>
    Number(
      (
        await db
          .deleteFrom('emailNotifications')
          .where('orgId', 'is', null)
          .where('receivedAt', '<', sql<Date>`now() - ${days}::int * interval '1 day'`)
          .executeTakeFirst()
      ).numDeletedRows,
    ),
};
