import { type Insertable, type Kysely, type QueryCreator, type RawBuilder, sql } from 'kysely';
import type { EmailAttachmentsTable, EmailMessageRow, EmailMessagesTable } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import { queryTemplate, valuesOf } from '../../db/query-template.ts';

/** Whether the address is one of ours: any org's inbox or sender (mail between two agents here is a loop too). */
export const ownAddress = (address: string | RawBuilder<unknown>) =>
  sql<boolean>`(exists (select 1 from email_inboxes where email_address = ${address})
    or exists (select 1 from email_integrations where lower(from_email) = ${address}))`;

/** A statement that begins by creating the message's thread, or by making it the newest. */
export const withThread = (
  db: Kysely<DB>,
  row: { orgId: string; threadId: string },
  thread: { newTitle: string } | 'existing',
): QueryCreator<DB> =>
  (thread === 'existing'
    ? db.with('thread', (q) => q.updateTable('threads').set({ updatedAt: sql<Date>`now()` }).where('id', '=', row.threadId))
    : db.with('thread', (q) =>
        q
          .insertInto('threads')
          .values({ id: row.threadId, orgId: row.orgId, userId: null, channel: 'email', title: thread.newTitle }),
      )) as unknown as QueryCreator<DB>;

/** The columns every stored message is inserted with, received or sent. */
export const threadMessageColumns = [
  'id',
  'orgId',
  'threadId',
  'inboxId',
  'direction',
  'messageId',
  'inReplyTo',
  'referenceIds',
  'fromAddress',
  'toAddresses',
  'subject',
  'textBody',
  'htmlBody',
  'status',
] as const;

/** The columns a message is inserted with (thread-mail's outbound messages); the others take their defaults. */
const messageColumns = [...threadMessageColumns, 'actionId', 'toolCallId', 'sealedExtras'] as const;
type MessageInsert = Required<Pick<Insertable<EmailMessagesTable>, (typeof messageColumns)[number]>> & {
  orgId: string;
  threadId: string;
};

const insertMessageInto = {
  existing: queryTemplate((db, args: MessageInsert) =>
    withThread(db, args, 'existing').insertInto('emailMessages').values(valuesOf(args, messageColumns)).returningAll(),
  ),
  new: queryTemplate((db, args: MessageInsert & { newTitle: string }) =>
    withThread(db, args, { newTitle: args.newTitle })
      .insertInto('emailMessages')
      .values(valuesOf(args, messageColumns))
      .returningAll(),
  ),
};

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

  /**
   * Stores a message in its thread in one statement: a new thread (`newTitle`: of channel `email`,
   * owned by its org, no user) is created with it; an existing one becomes the newest.
   */
  insertMessage: (db: Kysely<DB>, row: MessageInsert, thread: { newTitle: string } | 'existing'): Promise<EmailMessageRow> =>
    thread === 'existing'
      ? insertMessageInto.existing.only(db, row)
      : insertMessageInto.new.only(db, { ...row, newTitle: thread.newTitle }),

  insertAttachments: async (db: Kysely<DB>, rows: Insertable<EmailAttachmentsTable>[]) => {
    if (rows.length > 0) await db.insertInto('emailAttachments').values(rows).execute();
  },

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

  /**
   * Actions started by the thread's mail within the last hour: the automatic replies it had. Each of
   * the thread's messages looks its actions up by index (a lateral aggregate, which the planner keeps
   * as a nested loop): joined plainly, a planner without fresh statistics hashed all recent actions.
   */
  autoRepliesWithinHour: async (db: Kysely<DB>, threadId: string): Promise<number> =>
    Number(
      (
        await db
          .selectFrom('emailMessages as m')
          .innerJoinLateral(
            (eb) =>
              eb
                .selectFrom('actions as a')
                .select((inner) => inner.fn.countAll<string>().as('count'))
                .whereRef('a.emailMessageId', '=', 'm.id')
                .where('a.createdAt', '>', sql<Date>`now() - interval '1 hour'`)
                .as('r'),
            (join) => join.onTrue(),
          )
          .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('r.count'), sql<string>`0`).as('count'))
          .where('m.threadId', '=', threadId)
          .executeTakeFirstOrThrow()
      ).count,
    ),

  /** Whether the address is one of ours. */
  isOwnAddress: async (db: Kysely<DB>, address: string): Promise<boolean> =>
    (await db.selectNoFrom(ownAddress(address).as('own')).executeTakeFirstOrThrow()).own,

  inboxesAt: (db: Kysely<DB>, orgId: string, addresses: string[]) =>
    addresses.length === 0
      ? Promise.resolve([])
      : db.selectFrom('emailInboxes').selectAll().where('orgId', '=', orgId).where('emailAddress', 'in', addresses).execute(),
};
