import type { Kysely } from 'kysely';
import { olderThan } from '../../db/keyset.ts';
import type { DB } from '../../db/schema.ts';
import type { Cursor } from '../../lib/pagination.ts';

/** What operators read of email: threads, their messages with attachments and delivery events, suppressions. Scoped by org. */
export const emailThreadsRepo = {
  /** `limit + 1` email threads, most recent activity first, after the cursor (on updatedAt, id). */
  list: (db: Kysely<DB>, orgId: string, options: { inboxId?: string; limit: number; after?: Cursor }) =>
    db
      .selectFrom('threads as t')
      .select([
        't.id',
        't.title as subject',
        't.createdAt',
        't.updatedAt',
        (eb) =>
          eb
            .selectFrom('emailMessages as m')
            .whereRef('m.threadId', '=', 't.id')
            .select(eb.fn.countAll<string>().as('n'))
            .as('messageCount'),
        (eb) =>
          eb
            .selectFrom('emailMessages as m')
            .whereRef('m.threadId', '=', 't.id')
            .select('m.inboxId')
            .where('m.inboxId', 'is not', null)
            .orderBy('m.createdAt')
            .limit(1)
            .as('inboxId'),
        (eb) =>
          eb
            .selectFrom('emailMessages as m')
            .whereRef('m.threadId', '=', 't.id')
            .select('m.fromAddress')
            .orderBy('m.createdAt')
            .orderBy('m.id')
            .limit(1)
            .as('startedBy'),
      ])
      .where('t.orgId', '=', orgId)
      .where('t.channel', '=', 'email')
      .$if(options.inboxId !== undefined, (q) =>
        q.where((eb) =>
          eb.exists(
            eb
              .selectFrom('emailMessages as m')
              .select('m.id')
              .whereRef('m.threadId', '=', 't.id')
              .where('m.inboxId', '=', options.inboxId!),
          ),
        ),
      )
      .$if(options.after !== undefined, (q) => q.where(olderThan(options.after!, 't.updatedAt', 't.id')))
      .orderBy('t.updatedAt', 'desc')
      .orderBy('t.id', 'desc')
      .limit(options.limit + 1)
      .execute(),

  findThread: (db: Kysely<DB>, orgId: string, threadId: string) =>
    db
      .selectFrom('threads')
      .select(['id', 'title as subject', 'createdAt', 'updatedAt'])
      .where('orgId', '=', orgId)
      .where('id', '=', threadId)
      .where('channel', '=', 'email')
      .executeTakeFirst(),

  /** The thread's messages, oldest first, each with the action that answered it (inbound) or sent it (outbound). */
  messages: (db: Kysely<DB>, threadId: string) =>
    db
      .selectFrom('emailMessages as m')
      .selectAll('m')
      .select((eb) =>
        eb.fn
          .coalesce('m.actionId', eb.selectFrom('actions as a').select('a.id').whereRef('a.emailMessageId', '=', 'm.id').limit(1))
          .as('relatedActionId'),
      )
      .where('m.threadId', '=', threadId)
      .orderBy('m.createdAt')
      .orderBy('m.id')
      .execute(),

  attachmentsOf: (db: Kysely<DB>, messageIds: string[]) =>
    messageIds.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('emailAttachments')
          .select([
            'id',
            'messageId',
            'filename',
            'contentType',
            'sizeBytes',
            'status',
            'error',
            'documentId',
            'contentId',
            'contentDisposition',
          ])
          .where('messageId', 'in', messageIds)
          .orderBy('messageId')
          .orderBy('position')
          .execute(),

  eventsOf: (db: Kysely<DB>, messageIds: string[]) =>
    messageIds.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('emailDeliveryEvents')
          .select(['messageId', 'type', 'data', 'occurredAt'])
          .where('messageId', 'in', messageIds)
          .orderBy('occurredAt')
          .orderBy('createdAt')
          .execute(),

  /** An attachment's bytes: stored with it, or (sent) its document's PDF. */
  attachmentContent: (db: Kysely<DB>, orgId: string, id: string) =>
    db
      .selectFrom('emailAttachments as x')
      .leftJoin('documents as d', (join) => join.onRef('d.id', '=', 'x.documentId').onRef('d.orgId', '=', 'x.orgId'))
      .select(['x.filename', 'x.contentType', 'x.status', (eb) => eb.fn.coalesce('x.content', 'd.pdf').as('content')])
      .where('x.orgId', '=', orgId)
      .where('x.id', '=', id)
      .executeTakeFirst(),

  messageHtml: (db: Kysely<DB>, orgId: string, id: string) =>
    db
      .selectFrom('emailMessages')
      .select(['htmlBody', 'textBody'])
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .executeTakeFirst(),

  suppressions: (db: Kysely<DB>, orgId: string, limit: number, after?: { createdAt: Date; address: string }) =>
    db
      .selectFrom('emailSuppressions')
      .select(['address', 'reason', 'detail', 'messageId', 'createdAt'])
      .where('orgId', '=', orgId)
      .$if(after !== undefined, (q) =>
        q.where(olderThan({ createdAt: after!.createdAt, id: after!.address }, 'createdAt', 'address')),
      )
      .orderBy('createdAt', 'desc')
      .orderBy('address', 'desc')
      .limit(limit + 1)
      .execute(),

  removeSuppression: async (db: Kysely<DB>, orgId: string, address: string): Promise<boolean> =>
    (await db.deleteFrom('emailSuppressions').where('orgId', '=', orgId).where('address', '=', address).executeTakeFirst())
      .numDeletedRows > 0n,
};
