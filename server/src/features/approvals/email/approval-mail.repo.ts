import { sql, type Kysely } from 'kysely';
import type { ApprovalLinksTable, ApprovalNotificationStatus, DB, NotifyChannel, RuleApprovers } from '../../../db/schema.ts';
import { approversQuery } from '../../users/org-approvers.repo.ts';
import { answeredEmail, decisionRules } from '../approvers.repo.ts';

export interface Approver {
  id: string;
  email: string;
  name: string;
  approvalEmails: boolean;
}

/** Notifications, links and the approval threads of actions; every query is scoped by org or by a row the caller found so. */
export const approvalMailRepo = {
  async approvers(db: Kysely<DB>, orgId: string, approvers: RuleApprovers | null): Promise<Approver[]> {
    const rows = await approversQuery(db, orgId, approvers).orderBy('u.email').execute();
    return rows.map((row) => ({
      id: row.id,
      email: row.email,
      name: [row.firstName, row.lastName].filter(Boolean).join(' ') || row.username,
      approvalEmails: row.approvalEmails,
    }));
  },

  /**
   * What an approval email says of its action, and whom its rule asks and how. An email's action has no
   * rule: those its inbox's assignment names decide (decisionRules), told as the assignment said when it was made.
   */
  actionToNotify: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('actions as a')
      .leftJoin('actionRules as r', 'r.id', 'a.actionRuleId')
      .innerJoin('organizations as o', 'o.id', 'a.orgId')
      .leftJoin('agents as g', 'g.id', 'a.agentId')
      .leftJoin('emailMessages as m', 'm.id', 'a.emailMessageId')
      .leftJoin('emailInboxes as i', 'i.id', 'm.inboxId')
      .innerJoin(decisionRules(db).as('d'), 'd.actionId', 'a.id')
      .select((eb) => [
        'o.slug as orgSlug',
        'a.id',
        'a.orgId',
        'a.status',
        'a.eventType',
        'a.externalId',
        'a.createdAt',
        // In the email's and Slack's "Rule:" line: the rule, or the inbox the email came to.
        sql<string | null>`coalesce(${eb.ref('r.name')}, 'inbox ' || ${eb.ref('i.emailAddress')})`.as('ruleName'),
        'd.approvers',
        'd.minApprovals',
        sql<NotifyChannel[]>`coalesce(${eb.ref('r.notify')}, ${eb.ref('a.notify')}, '[]'::jsonb)`.as('notify'),
        'g.name as agentName',
        'm.fromAddress as emailFrom',
        'm.subject as emailSubject',
      ])
      .where('a.id', '=', actionId)
      .executeTakeFirst()
      .then((row) => row && { ...row, email: answeredEmail(row) }),

  stagedCalls: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('toolCalls')
      .select(['id', 'toolCallId', 'toolName', 'input', 'mode', 'modeSource', 'stagedReason', 'expiresAt', 'requestedAt'])
      .where('actionId', '=', actionId)
      .where('status', '=', 'staged')
      .orderBy('position')
      .execute(),

  notificationsOf: (db: Kysely<DB>, actionId: string, channel: NotifyChannel) =>
    db
      .selectFrom('approvalNotifications')
      .select(['toolCallId', 'userId', 'status', 'emailMessageId'])
      .where('actionId', '=', actionId)
      .where('channel', '=', channel)
      .execute(),

  /**
   * Records (or, after an interrupted send, records again) one approver's notification of each call; the rows' ids
   * (kept on conflict).
   */
  async upsertNotifications(
    db: Kysely<DB>,
    rows: Array<{
      id: string;
      orgId: string;
      actionId: string;
      toolCallId: string;
      userId: string;
      address: string;
      status: ApprovalNotificationStatus;
      reason: string | null;
      emailMessageId: string | null;
    }>,
  ) {
    if (rows.length === 0) return [];
    return db
      .insertInto('approvalNotifications')
      .values(rows.map((row) => ({ ...row, channel: 'email' as const })))
      .onConflict((oc) =>
        oc.columns(['toolCallId', 'userId', 'channel']).doUpdateSet((eb) => ({
          status: eb.ref('excluded.status'),
          reason: eb.ref('excluded.reason'),
          address: eb.ref('excluded.address'),
          emailMessageId: eb.ref('excluded.emailMessageId'),
          updatedAt: sql<Date>`now()`,
        })),
      )
      .returning(['id', 'toolCallId'])
      .execute();
  },

  /** How an email's send ended, on its notifications still `sending`: an attempt that lost its job overwrites nothing. */
  settleNotifications: (db: Kysely<DB>, emailMessageId: string, status: ApprovalNotificationStatus, reason: string | null) =>
    db
      .updateTable('approvalNotifications')
      .set({ status, reason, updatedAt: sql<Date>`now()` })
      .where('emailMessageId', '=', emailMessageId)
      .where('status', '=', 'sending')
      .execute(),

  /** The approval thread of an action (one per action), and the approver's last email in it. */
  async threadOf(db: Kysely<DB>, actionId: string, userId: string) {
    const messages = await db
      .selectFrom('approvalNotifications as n')
      .innerJoin('emailMessages as m', 'm.id', 'n.emailMessageId')
      .select(['m.threadId', 'm.messageId', 'm.providerMessageId', 'm.referenceIds', 'm.subject', 'n.userId'])
      .where('n.actionId', '=', actionId)
      .orderBy('m.createdAt', 'desc')
      .execute();
    return { threadId: messages[0]?.threadId, last: messages.find((message) => message.userId === userId) };
  },

  insertLinks: async (db: Kysely<DB>, rows: Array<Omit<ApprovalLinksTable, 'createdAt' | 'usedAt'>>) => {
    if (rows.length > 0) await db.insertInto('approvalLinks').values(rows).execute();
  },

  /** A link by its token's hash, with what it decides: the call, its action, the approver. */
  linkByHash: (db: Kysely<DB>, tokenHash: string) =>
    db
      .selectFrom('approvalLinks as l')
      .innerJoin('toolCalls as c', 'c.id', 'l.toolCallId')
      .innerJoin('actions as a', 'a.id', 'c.actionId')
      .leftJoin('agents as g', 'g.id', 'a.agentId')
      .innerJoin('users as u', 'u.id', 'l.userId')
      .leftJoin('users as d', 'd.id', 'c.decidedByUserId')
      .select([
        'l.id',
        'l.orgId',
        'l.userId',
        'l.decision',
        'l.expiresAt',
        'l.usedAt',
        'l.toolCallId as callRowId',
        'c.actionId',
        'c.toolCallId',
        'c.toolName',
        'c.input',
        'c.approvedInput',
        'c.status',
        'c.approval',
        'c.decidedAt',
        'c.decisionChannel',
        'd.email as decidedByEmail',
        'a.eventType',
        'g.name as agentName',
        'u.email as approverEmail',
      ])
      .where('l.tokenHash', '=', tokenHash)
      .executeTakeFirst(),

  /** Uses a link once: false when it was used already (the row is locked until the transaction ends). */
  useLink: async (db: Kysely<DB>, linkId: string, at: Date): Promise<boolean> =>
    (
      await db
        .updateTable('approvalLinks')
        .set({ usedAt: at })
        .where('id', '=', linkId)
        .where('usedAt', 'is', null)
        .executeTakeFirst()
    ).numUpdatedRows > 0n,

  /** The answer we sent (or began to send) to a reply: the outbound message in its thread that answers it. */
  answerTo: (db: Kysely<DB>, reply: { orgId: string; threadId: string; messageId: string }) =>
    db
      .selectFrom('emailMessages')
      .selectAll()
      .where('orgId', '=', reply.orgId)
      .where('threadId', '=', reply.threadId)
      .where('direction', '=', 'outbound')
      .where('inReplyTo', '=', reply.messageId)
      .executeTakeFirst(),

  /** The approval email a reply answers (by any id it names), with its approver and the calls it listed. */
  async repliedTo(db: Kysely<DB>, orgId: string, ids: string[]) {
    if (ids.length === 0) return undefined;
    const message = await db
      .selectFrom('emailMessages as m')
      .innerJoin('approvalNotifications as n', 'n.emailMessageId', 'm.id')
      .select(['m.id', 'm.threadId', 'm.messageId', 'm.referenceIds', 'm.subject', 'n.userId', 'n.actionId'])
      .where('m.orgId', '=', orgId)
      .where((eb) => eb.or([eb('m.messageId', 'in', ids), eb('m.providerMessageId', 'in', ids)]))
      .orderBy('m.createdAt', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!message) return undefined;
    const calls = await db
      .selectFrom('approvalNotifications as n')
      .innerJoin('toolCalls as c', 'c.id', 'n.toolCallId')
      .select(['c.id', 'c.toolCallId', 'c.toolName', 'c.status', 'c.approval', 'c.decidedByUserId', 'c.decisionChannel'])
      .where('n.emailMessageId', '=', message.id)
      .orderBy('c.position')
      .execute();
    return { ...message, calls };
  },

  /** A reply the inbound path hands to the reply job: waiting until the job has read it. */
  replyWaits: (trx: Kysely<DB>, orgId: string, messageId: string) =>
    trx
      .insertInto('approvalReplies')
      .values({ messageId, orgId, state: 'waiting' })
      .onConflict((oc) => oc.doNothing())
      .execute(),

  /** The job read the reply: its state, and what it did as the message's status detail (which users see), in one transaction. */
  replyRead: (db: Kysely<DB>, messageId: string, outcome: string) =>
    db.transaction().execute(async (trx) => {
      await trx
        .updateTable('approvalReplies')
        .set({ state: 'read', updatedAt: sql<Date>`now()` })
        .where('messageId', '=', messageId)
        .execute();
      await trx
        .updateTable('emailMessages')
        .set({ statusDetail: outcome, updatedAt: sql<Date>`now()` })
        .where('id', '=', messageId)
        .execute();
    }),

  /** A reply still waiting for the job, with the ids it names (In-Reply-To first, then References newest first). */
  async waitingReply(db: Kysely<DB>, id: string) {
    const row = await db
      .selectFrom('approvalReplies as r')
      .innerJoin('emailMessages as m', 'm.id', 'r.messageId')
      .select([
        'm.id',
        'm.orgId',
        'm.threadId',
        'm.inboxId',
        'm.messageId',
        'm.inReplyTo',
        'm.referenceIds',
        'm.fromAddress',
        'm.subject',
        'm.textBody',
        'm.headers',
        'm.authentication',
      ])
      .where('r.messageId', '=', id)
      .where('r.state', '=', 'waiting')
      .executeTakeFirst();
    return row && { ...row, ids: [...(row.inReplyTo ? [row.inReplyTo] : []), ...row.referenceIds.toReversed()] };
  },
};

export type LinkRow = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.linkByHash>>>;
