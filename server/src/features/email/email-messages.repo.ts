import { sql, type Insertable, type Kysely } from 'kysely';
import type { EmailAttachmentsTable, EmailMessageRow, EmailMessagesTable } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import { threadsRepo } from '../threads/threads.repo.ts';

/** Email threads (threads of channel `email`, owned by their org) and their messages; every query is scoped by org. */
export const emailMessagesRepo = {
  /** The thread that holds a message with any of these ids: ours, the provider's rewrite of ours, or a sender's. */
  threadOf: async (db: Kysely<DB>, orgId: string, ids: string[]): Promise<string | undefined> =>
    ids.length === 0
      ? undefined
      : (
          await db
            .selectFrom('emailMessages')
            .select('threadId')
            .where('orgId', '=', orgId)
            .where((eb) => eb.or([eb('messageId', 'in', ids), eb('providerMessageId', 'in', ids)]))
            .orderBy('createdAt', 'desc')
            .limit(1)
            .executeTakeFirst()
        )?.threadId,

  /** An email thread: of channel `email`, owned by its org (no user). */
  insertThread: (db: Kysely<DB>, thread: { id: string; orgId: string; title: string }) =>
    threadsRepo.insert(db, { ...thread, userId: null, channel: 'email' }),

  /** A new message makes its thread the newest. */
  touchThread: (db: Kysely<DB>, threadId: string) =>
    db.updateTable('threads').set({ updatedAt: sql<Date>`now()` }).where('id', '=', threadId).execute(),

  insertMessage: (db: Kysely<DB>, row: Insertable<EmailMessagesTable>): Promise<EmailMessageRow> =>
    db.insertInto('emailMessages').values(row).returningAll().executeTakeFirstOrThrow(),

  insertAttachments: async (db: Kysely<DB>, rows: Insertable<EmailAttachmentsTable>[]) => {
    if (rows.length > 0) await db.insertInto('emailAttachments').values(rows).execute();
  },

  setStatusDetail: (db: Kysely<DB>, id: string, statusDetail: string) =>
    db.updateTable('emailMessages').set({ statusDetail }).where('id', '=', id).execute(),

  /** A received email's row in the ledger (a delivery of source `email`): with its action, or skipped with the reason. */
  insertLedgerRow: (
    db: Kysely<DB>,
    row: {
      id: string;
      orgId: string;
      actionId: string | null;
      reason: string | null;
      providerEmailId: string;
      payload: string;
      headers: string;
    },
  ) =>
    db
      .insertInto('webhookDeliveries')
      .values({
        id: row.id,
        orgId: row.orgId,
        webhookId: null,
        actionId: row.actionId,
        status: row.actionId ? 'accepted' : 'skipped',
        reason: row.reason,
        replayable: false,
        eventType: 'email.received',
        externalId: row.providerEmailId,
        payload: row.payload,
        headers: row.headers,
        verificationScheme: 'wh',
        source: 'email',
      })
      .execute(),

  findReceived: (db: Kysely<DB>, orgId: string, providerEmailId: string) =>
    db
      .selectFrom('emailMessages')
      .select(['id', 'threadId'])
      .where('providerEmailId', '=', providerEmailId)
      .where('orgId', '=', orgId)
      .where('direction', '=', 'inbound')
      .executeTakeFirst(),

  /** The newest `limit` messages of a thread, oldest first. */
  lastOfThread: async (db: Kysely<DB>, threadId: string, limit: number) =>
    (
      await db
        .selectFrom('emailMessages')
        .select(['direction', 'fromAddress', 'toAddresses', 'ccAddresses', 'subject', 'sentAt', 'createdAt', 'textBody', 'id'])
        .where('threadId', '=', threadId)
        .orderBy('createdAt', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute()
    ).reverse(),

  attachmentNames: (db: Kysely<DB>, messageIds: string[]) =>
    messageIds.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('emailAttachments')
          .select(['messageId', 'filename', 'status'])
          .where('messageId', 'in', messageIds)
          .orderBy('messageId')
          .orderBy('position')
          .execute(),

  /** Actions started by the thread's mail within the last hour: the automatic replies it had. */
  autoRepliesWithinHour: async (db: Kysely<DB>, threadId: string): Promise<number> =>
    Number(
      (
        await db
          .selectFrom('actions as a')
          .innerJoin('emailMessages as m', 'm.id', 'a.emailMessageId')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .where('m.threadId', '=', threadId)
          .where('a.createdAt', '>', sql<Date>`now() - interval '1 hour'`)
          .executeTakeFirstOrThrow()
      ).count,
    ),

  /** Whether the address is one of ours: any org's inbox or sender (mail between two agents here is a loop too). */
  isOwnAddress: async (db: Kysely<DB>, address: string): Promise<boolean> =>
    (await db
      .selectFrom('emailInboxes')
      .select('id')
      .where('emailAddress', '=', address)
      .unionAll(db.selectFrom('emailIntegrations').select('orgId as id').where(sql`lower(from_email)`, '=', address))
      .limit(1)
      .executeTakeFirst()) !== undefined,

  /** The inbox's agents that answer automatically, primary first, with whether their assigner still exists. */
  autoResponders: (db: Kysely<DB>, inboxId: string) =>
    db
      .selectFrom('emailInboxAgents as a')
      .innerJoin('agents as g', 'g.id', 'a.agentId')
      .leftJoin('users as u', 'u.id', 'a.assignedByUserId')
      .select(['a.agentId', 'g.name as agentName', 'a.approvalRules', 'u.id as runAsUserId'])
      .where('a.inboxId', '=', inboxId)
      .where('a.autoRespond', '=', true)
      .orderBy('a.isPrimary', 'desc')
      .orderBy('a.createdAt')
      .execute(),

  inboxesAt: (db: Kysely<DB>, orgId: string, addresses: string[]) =>
    addresses.length === 0
      ? Promise.resolve([])
      : db.selectFrom('emailInboxes').selectAll().where('orgId', '=', orgId).where('emailAddress', 'in', addresses).execute(),
};
