import { sql, type Insertable, type Kysely } from 'kysely';
import type {
  ApprovalAttemptsTable,
  DB,
  DecisionChannel,
  ToolCallApproval,
  ToolCallApprovalsTable,
  ToolCallStatus,
} from '../../db/schema.ts';
import { answeredEmail, decisionRules } from './approvers.repo.ts';
import type { Cursor } from '../../lib/pagination.ts';

/** The record of decisions: each call's decision, each approval (a rule may ask for several), each refused attempt. */
export const approvalsRepo = {
  /** A human's (or the deadline's) decision on a staged call; undefined when it was decided already. */
  decide: (
    trx: Kysely<DB>,
    id: string,
    decision: {
      status: ToolCallStatus;
      approval: ToolCallApproval;
      userId: string | null;
      channel: DecisionChannel | null;
      externalId?: string | null;
      reason: string | null;
      at: Date;
      /** Approved: a fresh start (an interrupted call's is forgotten). */
      startedAt?: null;
      /** The call's result, when the decision is one (an interrupted call not run again). */
      output?: string;
      /** Approved with edits: the arguments it runs with (the model's stay in input); null: the model's after all. */
      approvedInput?: string | null;
    },
  ) =>
    trx
      .updateTable('toolCalls')
      .set({
        status: decision.status,
        approval: decision.approval,
        ...(decision.startedAt === null ? { startedAt: null } : {}),
        ...(decision.output === undefined ? {} : { output: decision.output, completedAt: decision.at }),
        ...(decision.approvedInput === undefined ? {} : { approvedInput: decision.approvedInput }),
        decidedByUserId: decision.userId,
        decisionChannel: decision.channel,
        decidedByExternalId: decision.externalId ?? null,
        decisionReason: decision.reason,
        decidedAt: decision.at,
      })
      .where('id', '=', id)
      .where('status', '=', 'staged')
      .returningAll()
      .executeTakeFirst(),

  /** Records a refused attempt; the same attempt made again (its id is recorded) is not recorded twice. */
  recordAttempt: (db: Kysely<DB>, attempt: Insertable<ApprovalAttemptsTable>) =>
    db
      .insertInto('approvalAttempts')
      .values(attempt)
      .onConflict((conflict) => conflict.column('id').doNothing())
      .execute(),

  /** The refused attempts on an action's calls, oldest first. */
  attemptsForAction: (db: Kysely<DB>, actionId: string) =>
    db
      .selectFrom('approvalAttempts as a')
      .innerJoin('toolCalls as t', 't.id', 'a.toolCallId')
      .selectAll('a')
      .where('t.actionId', '=', actionId)
      .orderBy('a.createdAt')
      .orderBy('a.id')
      .execute(),

  /**
   * The calls that needed approval, newest first (a step's calls in their order; `after`: the cursor's
   * call and its requestedAt); with `namedUserId`, only those whose rule (or inbox) names that member as an approver.
   */
  listApprovals: (
    db: Kysely<DB>,
    orgId: string,
    query: { approval: ToolCallApproval; namedUserId?: string },
    limit: number,
    after?: Cursor,
  ) =>
    db
      .selectFrom('toolCalls as t')
      .innerJoin('actions as a', 'a.id', 't.actionId')
      .innerJoin(decisionRules(db).as('d'), 'd.actionId', 'a.id')
      .leftJoin('emailMessages as m', 'm.id', 'a.emailMessageId')
      .selectAll('t')
      .select(['a.runAsUserId', 'a.status as actionStatus', 'a.eventType', 'a.externalId', 'd.minApprovals as approvalsRequired'])
      .select(['m.fromAddress as emailFrom', 'm.subject as emailSubject'])
      .where('t.orgId', '=', orgId)
      .where('t.approval', '=', query.approval)
      .$if(query.namedUserId !== undefined, (q) =>
        q.where(sql<boolean>`d.approvers -> 'userIds' @> ${JSON.stringify([query.namedUserId])}::jsonb`),
      )
      .$if(after !== undefined, (q) => q.where(afterCall(orgId, after!)))
      // The calls of one step share their requested_at: they come in the order the model proposed them.
      .orderBy('t.requestedAt', 'desc')
      .orderBy('t.actionId', 'desc')
      .orderBy('t.position')
      .limit(limit + 1)
      .execute()
      .then((rows) =>
        rows.map(({ emailFrom, emailSubject, ...row }) => ({ ...row, email: answeredEmail({ emailFrom, emailSubject }) })),
      ),

  /** One approver's approval, for the record and the count. */
  insertApproval: (trx: Kysely<DB>, approval: Insertable<ToolCallApprovalsTable>) =>
    trx.insertInto('toolCallApprovals').values(approval).execute(),

  /** The approvals that count for a call now (none superseded by a later edit), oldest first. */
  currentApprovals: (db: Kysely<DB>, toolCallRowId: string) =>
    db
      .selectFrom('toolCallApprovals')
      .selectAll()
      .where('toolCallId', '=', toolCallRowId)
      .where('supersededAt', 'is', null)
      .orderBy('createdAt')
      .orderBy('id')
      .execute(),

  /** An edit changed the arguments: the approvals so far were of others, and start again. */
  supersede: (trx: Kysely<DB>, toolCallRowId: string, at: Date) =>
    trx
      .updateTable('toolCallApprovals')
      .set({ supersededAt: at })
      .where('toolCallId', '=', toolCallRowId)
      .where('supersededAt', 'is', null)
      .execute(),

  /** The arguments the approvals of a waiting call are for (null: the model's), set by an edit. */
  setPendingArguments: (trx: Kysely<DB>, toolCallRowId: string, approvedInput: string | null) =>
    trx.updateTable('toolCalls').set({ approvedInput }).where('id', '=', toolCallRowId).where('status', '=', 'staged').execute(),

  /** Every approval of the given calls (superseded ones too), oldest first. */
  approvalsOf: (db: Kysely<DB>, toolCallRowIds: string[]) =>
    toolCallRowIds.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('toolCallApprovals')
          .select(['toolCallId', 'userId', 'channel', 'arguments', 'reason', 'supersededAt', 'createdAt'])
          .where('toolCallId', 'in', toolCallRowIds)
          .orderBy('createdAt')
          .orderBy('id')
          .execute(),
};

/**
 * The calls after the cursor's in (requested_at desc, action desc, position) order. The cursor names its
 * call (read in the org), whose action and position place it among the calls requested at the same
 * moment; `requested_at <=` lets the (org, approval, requested_at desc) index bound the scan. A call not
 * found (gone since, or another organization's) places nothing: the page goes on from before its moment
 * (each scalar subquery is null; a row subquery would find no row and end the list).
 */
function afterCall(orgId: string, after: Cursor) {
  const cursorCall = (column: 'action_id' | 'position') =>
    sql`(select ${sql.ref(column)} from tool_calls where id = ${after.id} and org_id = ${orgId})`;
  const { createdAt } = after;
  return sql<boolean>`t.requested_at <= ${createdAt}
    and (t.requested_at, t.action_id, -t.position) < (${createdAt}, ${cursorCall('action_id')}, -${cursorCall('position')})`;
}
