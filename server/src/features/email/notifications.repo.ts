import { type Kysely, sql, type UpdateObject } from 'kysely';
import type { EmailNotificationRow, EmailNotificationStatus } from '../../db/email-schema.ts';
import { commitWithoutFlush } from '../../db/flushless-commit.ts';
import type { DB } from '../../db/schema.ts';

/** An org that may have sent a notification, with the secret that proves it. */
export interface CandidateOrg {
  orgId: string;
  webhookSecretEncrypted: string;
}

interface SettleOutcome {
  status: EmailNotificationStatus;
  reason?: string | null;
  lastError?: string | null;
  retryInMs?: number;
}

/** A notification's columns once it is settled (`settle`, or the statement that stores its email). */
export const settledValues = (outcome: SettleOutcome): UpdateObject<DB, 'emailNotifications'> => ({
  status: outcome.status,
  reason: outcome.reason ?? null,
  lastError: outcome.lastError ?? null,
  leaseExpiresAt: null,
  retryAt: outcome.retryInMs ? sql<Date>`now() + ${outcome.retryInMs}::int * interval '1 millisecond'` : null,
  processedAt: outcome.status === 'received' ? null : sql<Date>`now()`,
});

/** The provider's notifications: stored once per (org, svix-id) before they are answered; the workers claim them from here. */
export const notificationsRepo = {
  /** The inboxes at these addresses whose org has an integration (to verify with): the org and its secret. */
  inboxOrgs: (
    db: Kysely<DB>,
    addresses: string[],
  ): Promise<Array<{ emailAddress: string; orgId: string; webhookSecretEncrypted: string }>> =>
    db
      .selectFrom('emailInboxes as i')
      .innerJoin('emailIntegrations as x', 'x.orgId', 'i.orgId')
      .select(['i.emailAddress', 'x.orgId', 'x.webhookSecretEncrypted'])
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
   * Takes up to `limit` ready notifications for this process, in one statement, each for `leaseMs` (on
   * the database's clock, which every process shares): received ones past their retry time that no
   * live lease holds (new, waiting for a retry, or held by a worker that died or gave them back), the
   * longest-ready first. Rows another process is taking are skipped, not waited for. Prepared: the
   * taken rows are updated by their keys, so that its generic plan is index scans (the ready index).
   * It commits without waiting for the flush: a claim a crash loses is a notification taken again.
   */
  claimReady: async (db: Kysely<DB>, limit: number, leaseMs: number): Promise<EmailNotificationRow[]> =>
    (
      await sql<EmailNotificationRow>`
        update email_notifications set lease_expires_at = now() + ${leaseMs}::int * interval '1 millisecond',
          attempts = attempts + 1
        where id = any(array(
          select id from email_notifications
          where status = 'received' and greatest(lease_expires_at, retry_at, received_at) <= now()
          order by greatest(lease_expires_at, retry_at, received_at)
          limit ${limit} for update skip locked))
          and ${commitWithoutFlush}
        returning *`.execute(db)
    ).rows,

  renewLease: (db: Kysely<DB>, id: string, leaseMs: number) =>
    db
      .updateTable('emailNotifications')
      .set({ leaseExpiresAt: sql<Date>`now() + ${leaseMs}::int * interval '1 millisecond'` })
      .where('id', '=', id)
      .where('status', '=', 'received')
      .execute(),

  /** Gives a lease up at once (its process is stopping): a worker of any process may take it now. */
  releaseLease: (db: Kysely<DB>, id: string) =>
    db
      .updateTable('emailNotifications')
      .set({ leaseExpiresAt: null })
      .where('id', '=', id)
      .where('status', '=', 'received')
      .execute(),

  /** Ends processing: the final statuses; `received` again keeps no lease and is retried after `retryInMs`. */
  settle: (db: Kysely<DB>, id: string, outcome: SettleOutcome) =>
    db
      .updateTable('emailNotifications')
      .set(settledValues(outcome))
      .where('id', '=', id)
      .where('status', '=', 'received')
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
