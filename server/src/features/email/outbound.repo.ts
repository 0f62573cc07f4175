import { sql, type Kysely } from 'kysely';
import type { EmailMessageRow, EmailMessageStatus, EmailSuppressionsTable } from '../../db/email-schema.ts';
import { queryTemplate } from '../../db/query-template.ts';
import type { DB } from '../../db/schema.ts';

const sendContext = queryTemplate((db, call: { orgId: string; actionId: string; toolCallId: string; recipients: string[] }) =>
  db
    .selectFrom('emailIntegrations as x')
    .leftJoin('actions as a', (join) => join.on('a.id', '=', call.actionId).onRef('a.orgId', '=', 'x.orgId'))
    .leftJoin('emailMessages as m', 'm.id', 'a.emailMessageId')
    .leftJoin('emailInboxes as i', 'i.id', 'm.inboxId')
    .selectAll('x')
    .select((eb) => [
      'm.id as answeredId',
      'm.threadId as answeredThreadId',
      'm.messageId as answeredMessageId',
      'm.referenceIds as answeredReferenceIds',
      'm.subject as answeredSubject',
      'i.id as answeredInboxId',
      'i.emailAddress as answeredEmailAddress',
      'i.displayName as answeredDisplayName',
      eb
        .selectFrom('emailMessages as own')
        .select('own.id')
        .where('own.actionId', '=', call.actionId)
        .where('own.toolCallId', '=', call.toolCallId)
        .as('storedId'),
      sql<Array<{ address: string; reason: string }>>`(
          select coalesce(json_agg(json_build_object('address', s.address, 'reason', s.reason)), '[]')
          from email_suppressions s where s.org_id = x.org_id and s.address = any(${call.recipients}))`.as('suppressed'),
    ])
    .where('x.orgId', '=', call.orgId),
);

const markSent = queryTemplate((db, sent: { id: string; providerEmailId: string; providerMessageId: string | null }) =>
  db
    .updateTable('emailMessages')
    .set({
      status: sql<EmailMessageStatus>`case when status = 'sending' then 'sent' else status end`,
      providerEmailId: sent.providerEmailId,
      providerMessageId: sql<string | null>`coalesce(${sent.providerMessageId}, provider_message_id)`,
      // A note of an earlier try the provider did not take is moot once it is sent.
      statusDetail: sql<string | null>`case when status = 'sending' then null else status_detail end`,
      sealedExtras: null,
      sentAt: sql<Date>`now()`,
      updatedAt: sql<Date>`now()`,
    })
    .where('id', '=', sent.id)
    // What this may have changed (a delivery event may have moved the status on first); the rest, the
    // bodies among it, is as the caller stored it.
    .returning(['status', 'statusDetail', 'providerEmailId', 'providerMessageId', 'sealedExtras', 'sentAt', 'updatedAt']),
);

/** A message failed, with why: what a send keeps sealed for its retry goes with it. */
const failedWith = (detail: string) => ({
  status: 'failed' as const,
  statusDetail: detail.slice(0, 2000),
  sealedExtras: null,
  updatedAt: sql<Date>`now()`,
});

/** What sendEmail and the provider's delivery events read and write of sent email; scoped by org. */
export const outboundRepo = {
  /**
   * What a sendEmail call needs before it sends, in one read: the org's integration (none: no row),
   * whether this call stored its message already (a resumed run), which recipients are suppressed,
   * and the inbound message the action answers, with its inbox, if it answers one.
   */
  sendContext: async (db: Kysely<DB>, call: { orgId: string; actionId: string; toolCallId: string; recipients: string[] }) => {
    const row = await sendContext.first(db, call);
    if (!row) return undefined;
    const {
      answeredId,
      answeredThreadId,
      answeredMessageId,
      answeredReferenceIds,
      answeredSubject,
      answeredInboxId,
      answeredEmailAddress,
      answeredDisplayName,
      storedId,
      suppressed,
      ...integration
    } = row;
    // The answered message's own columns are not null: a row of it was joined when its id is there.
    const answered =
      answeredId !== null
        ? {
            id: answeredId,
            threadId: answeredThreadId!,
            messageId: answeredMessageId,
            referenceIds: answeredReferenceIds!,
            subject: answeredSubject!,
            inboxId: answeredInboxId,
            emailAddress: answeredEmailAddress,
            displayName: answeredDisplayName,
          }
        : undefined;
    return { integration, storedId, suppressed, answered };
  },

  /**
   * A message cut off mid-send that is not sent again: failed, with why, its sealed extras dropped;
   * with `unchangedSince`, only if it has not changed since. Whether it was.
   */
  abandon: async (db: Kysely<DB>, orgId: string, id: string, detail: string, unchangedSince?: Date): Promise<boolean> => {
    const { numUpdatedRows } = await db
      .updateTable('emailMessages')
      .set(failedWith(detail))
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .where('status', '=', 'sending')
      .$if(unchangedSince !== undefined, (query) => query.where('updatedAt', '<', unchangedSince!))
      .executeTakeFirst();
    return numUpdatedRows > 0n;
  },

  /** One of an org's outbound messages. */
  outbound: (db: Kysely<DB>, orgId: string, id: string): Promise<EmailMessageRow | undefined> =>
    db
      .selectFrom('emailMessages')
      .selectAll()
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .where('direction', '=', 'outbound')
      .executeTakeFirst(),

  /** The message a tool call stored (a resumed run finds it). */
  ofToolCall: (db: Kysely<DB>, actionId: string, toolCallId: string): Promise<EmailMessageRow | undefined> =>
    db
      .selectFrom('emailMessages')
      .selectAll()
      .where('actionId', '=', actionId)
      .where('toolCallId', '=', toolCallId)
      .executeTakeFirst(),

  suppressedAmong: (db: Kysely<DB>, orgId: string, addresses: string[]) =>
    db
      .selectFrom('emailSuppressions')
      .select(['address', 'reason'])
      .where('orgId', '=', orgId)
      .where('address', 'in', addresses)
      .execute(),

  suppress: async (db: Kysely<DB>, rows: Array<Omit<EmailSuppressionsTable, 'createdAt'>>) => {
    if (rows.length > 0)
      await db
        .insertInto('emailSuppressions')
        .values(rows)
        .onConflict((oc) => oc.columns(['orgId', 'address']).doNothing())
        .execute();
  },

  documents: (db: Kysely<DB>, orgId: string, ids: string[]) =>
    ids.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('documents')
          .select(['id', 'title', 'sizeBytes', 'pdf'])
          .where('orgId', '=', orgId)
          .where('id', 'in', ids)
          .execute(),

  /** Refused while `sending`: one that another send of it (the same idempotency key) got sent stays sent. */
  markFailed: (db: Kysely<DB>, id: string, detail: string) =>
    db.updateTable('emailMessages').set(failedWith(detail)).where('id', '=', id).where('status', '=', 'sending').execute(),

  /** Why a message is still `sending` (the provider did not take it at once; it is sent again). */
  noteStillSending: (db: Kysely<DB>, id: string, detail: string) =>
    db
      .updateTable('emailMessages')
      .set({ statusDetail: detail.slice(0, 2000), updatedAt: sql<Date>`now()` })
      .where('id', '=', id)
      .where('status', '=', 'sending')
      .execute(),

  /** A sendEmail call's message still to be sent (by the call's id, it is sent again with the same key). */
  unsentOfToolCall: (db: Kysely<DB>, id: string) =>
    db
      .selectFrom('emailMessages')
      .selectAll()
      .where('id', '=', id)
      .where('direction', '=', 'outbound')
      .where('status', '=', 'sending')
      .where('actionId', 'is not', null)
      .where('toolCallId', 'is not', null)
      .executeTakeFirst(),

  /** sendEmail messages still `sending` that have not changed since `quietSince` (the oldest first). */
  quietSendingCalls: (db: Kysely<DB>, quietSince: Date, limit: number) =>
    db
      .selectFrom('emailMessages')
      .select(['id', 'orgId'])
      .where('status', '=', 'sending')
      .where('toolCallId', 'is not', null)
      .where('updatedAt', '<', quietSince)
      .orderBy('updatedAt')
      .limit(limit)
      .execute(),

  /** The documents a sendEmail message attaches, in their order, with their PDFs. */
  attachedDocuments: (db: Kysely<DB>, orgId: string, messageId: string) =>
    db
      .selectFrom('emailAttachments as a')
      .innerJoin('documents as d', (join) => join.onRef('d.id', '=', 'a.documentId').onRef('d.orgId', '=', 'a.orgId'))
      .select(['d.id', 'd.title', 'd.sizeBytes', 'd.pdf'])
      .where('a.orgId', '=', orgId)
      .where('a.messageId', '=', messageId)
      .orderBy('a.position')
      .execute(),

  /** The provider took it. A delivery event that came first (by our tag) has moved it on already: that is kept. */
  markSent: (db: Kysely<DB>, id: string, sent: { providerEmailId: string; providerMessageId: string | null }) =>
    markSent.only(db, { id, ...sent }),

  /** A sent message whose provider Message-ID is still unknown, with its org's API key. */
  awaitingMessageId: (db: Kysely<DB>, id: string) =>
    db
      .selectFrom('emailMessages as m')
      .innerJoin('emailIntegrations as x', 'x.orgId', 'm.orgId')
      .select(['m.id', 'm.providerEmailId', 'm.providerMessageId', 'x.apiKeyEncrypted'])
      .where('m.id', '=', id)
      .where('m.providerMessageId', 'is', null)
      .executeTakeFirst(),

  setProviderMessageId: (db: Kysely<DB>, id: string, providerMessageId: string) =>
    db
      .updateTable('emailMessages')
      .set({ providerMessageId })
      .where('id', '=', id)
      .where('providerMessageId', 'is', null)
      .execute(),

  /**
   * The sent message a notification is about (by the provider's id, or by our message tag), locked
   * until the transaction ends: the events of one email are recorded one after another.
   */
  lockSentFor: (db: Kysely<DB>, orgId: string, providerEmailId: string, taggedMessageId: string | undefined) =>
    db
      .selectFrom('emailMessages')
      .select(['id', 'status', 'providerEmailId', 'providerMessageId', 'toAddresses'])
      .where('orgId', '=', orgId)
      .where('direction', '=', 'outbound')
      .where((eb) =>
        eb.or([eb('providerEmailId', '=', providerEmailId), ...(taggedMessageId ? [eb('id', '=', taggedMessageId)] : [])]),
      )
      .forUpdate()
      .executeTakeFirst(),

  recordEvent: (
    db: Kysely<DB>,
    event: { id: string; orgId: string; messageId: string; type: string; data: string; occurredAt: Date },
  ) => db.insertInto('emailDeliveryEvents').values(event).execute(),

  updateDelivery: (
    db: Kysely<DB>,
    id: string,
    changes: {
      status: EmailMessageStatus;
      statusDetail?: string | null;
      providerEmailId: string;
      providerMessageId: string | null;
    },
  ) =>
    db
      .updateTable('emailMessages')
      .set({ ...changes, updatedAt: sql<Date>`now()` })
      .where('id', '=', id)
      .execute(),
};
