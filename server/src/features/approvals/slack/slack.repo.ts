import { type Kysely, sql } from 'kysely';
import type { ApprovalNotificationStatus, DB } from '../../../db/schema.ts';

/** The Slack side of approvals' record: one notification row per call shown in Slack, with its message. */
export const slackRepo = {
  /** The calls of the action told in Slack (or being told: `sending`), with their message. */
  told: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('approvalNotifications')
      .select(['id', 'toolCallId', 'status', 'address', 'slackTs', 'updatedAt'])
      .where('actionId', '=', actionId)
      .where('channel', '=', 'slack')
      .execute(),

  /** Calls about to be posted (`sending`); one row per call, so a retried job re-posts what never settled. */
  sending: (db: Kysely<DB>, rows: Array<{ id: string; orgId: string; actionId: string; toolCallId: string; address: string }>) =>
    rows.length === 0
      ? Promise.resolve()
      : db
          .insertInto('approvalNotifications')
          .values(rows.map((row) => ({ ...row, userId: null, channel: 'slack' as const, status: 'sending' as const })))
          .onConflict((oc) =>
            oc
              .column('toolCallId')
              // A literal, not a parameter: the partial index is found by its predicate when the statement is
              // planned, and a prepared statement's generic plan knows no parameter's value.
              .where('channel', '=', sql.lit('slack'))
              .doUpdateSet({ status: 'sending', address: sql`excluded.address`, updatedAt: sql<Date>`now()` }),
          )
          .execute()
          .then(() => undefined),

  settle: (
    db: Kysely<DB>,
    toolCallIds: string[],
    outcome: { status: ApprovalNotificationStatus; reason: string | null; ts: string | null; channel: string },
  ) =>
    db
      .updateTable('approvalNotifications')
      .set({
        status: outcome.status,
        reason: outcome.reason,
        slackTs: outcome.ts,
        address: outcome.channel,
        updatedAt: sql<Date>`now()`,
      })
      .where('channel', '=', 'slack')
      .where('toolCallId', 'in', toolCallIds)
      .execute(),

  /** Holds the action's row until the transaction ends: a decision, which locks it for update, waits meanwhile. */
  lockAction: (db: Kysely<DB>, actionId: string) =>
    db.selectFrom('actions').select('id').where('id', '=', actionId).forShare().executeTakeFirst(),

  /** Whether a call is shown in a Slack message (then a decision on it updates that message). */
  shown: async (db: Kysely<DB>, toolCallRowId: string): Promise<boolean> =>
    (await db
      .selectFrom('approvalNotifications')
      .select('id')
      .where('toolCallId', '=', toolCallRowId)
      .where('channel', '=', 'slack')
      .where('slackTs', 'is not', null)
      .executeTakeFirst()) !== undefined,

  /** The calls of the action's Slack messages as they stand: each with its decision, its decider's email and its approvals. */
  messageCalls: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('approvalNotifications as n')
      .innerJoin('toolCalls as c', 'c.id', 'n.toolCallId')
      .leftJoin('users as d', 'd.id', 'c.decidedByUserId')
      .select([
        'n.address as slackChannel',
        'n.slackTs',
        'c.id',
        'c.toolCallId',
        'c.toolName',
        'c.input',
        'c.approvedInput',
        'c.mode',
        'c.modeSource',
        'c.stagedReason',
        'c.expiresAt',
        'c.approval',
        'c.decisionChannel',
        'c.decisionReason',
        'c.decidedAt',
        'c.decidedByExternalId',
        'd.email as decidedByEmail',
        'c.requestedAt',
      ])
      .where('n.actionId', '=', actionId)
      .where('n.channel', '=', 'slack')
      .where('n.slackTs', 'is not', null)
      .orderBy('c.position')
      .execute(),
};

/** A member of the org by email (any case): who a Slack user is to the service. */
export const memberByEmail = (db: Kysely<DB>, orgId: string, email: string) =>
  db
    .selectFrom('users as u')
    .innerJoin('memberships as m', 'm.userId', 'u.id')
    .select(['u.id', 'u.email'])
    .where('m.orgId', '=', orgId)
    .where(sql<string>`lower(u.email)`, '=', email.toLowerCase())
    .executeTakeFirst();
