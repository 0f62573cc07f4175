import { sql, type Insertable, type Kysely } from 'kysely';
import type {
  ApprovalAttemptsTable,
  DB,
  DecisionChannel,
  ToolCallApproval,
  ToolCallRow,
  ToolCallsTable,
  ToolCallStatus,
} from '../../db/schema.ts';
import { olderThan } from '../../db/keyset.ts';
import type { Cursor } from '../../lib/pagination.ts';

export const toolCallsRepo = {
  insertMany: (trx: Kysely<DB>, rows: Insertable<ToolCallsTable>[]) =>
    rows.length === 0
      ? Promise.resolve()
      : trx
          .insertInto('toolCalls')
          .values(rows)
          .execute()
          .then(() => undefined),

  forAction: (db: Kysely<DB>, actionId: string): Promise<ToolCallRow[]> =>
    db.selectFrom('toolCalls').selectAll().where('actionId', '=', actionId).orderBy('requestedAt').orderBy('id').execute(),

  /** A human's (or the deadline's) decision on a staged call; undefined when it was decided already. */
  decide: (
    trx: Kysely<DB>,
    id: string,
    decision: {
      status: ToolCallStatus;
      approval: ToolCallApproval;
      userId: string | null;
      channel: DecisionChannel | null;
      reason: string | null;
      at: Date;
      /** Approved: a fresh start (an interrupted call's is forgotten). */
      startedAt?: null;
      /** The call's result, when the decision is one (an interrupted call not run again). */
      output?: string;
      /** Approved with edits: the arguments it runs with (the model's stay in input). */
      approvedInput?: string;
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
        decisionReason: decision.reason,
        decidedAt: decision.at,
      })
      .where('id', '=', id)
      .where('status', '=', 'staged')
      .returningAll()
      .executeTakeFirst(),

  /** An attempt to decide that was refused, for the record. */
  recordAttempt: (db: Kysely<DB>, attempt: Insertable<ApprovalAttemptsTable>) =>
    db.insertInto('approvalAttempts').values(attempt).execute(),

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

  /** A `ready` call waits for a human after all (an interrupted one), with the reason. */
  stage: (trx: Kysely<DB>, id: string, staged: { reason: string; expiresAt: Date }) =>
    trx
      .updateTable('toolCalls')
      .set({ status: 'staged', approval: 'pending', stagedReason: staged.reason, expiresAt: staged.expiresAt })
      .where('id', '=', id)
      .where('status', '=', 'ready')
      .execute(),

  /** The other staged calls of an action end with it. */
  cancelStaged: (trx: Kysely<DB>, actionId: string, at: Date) =>
    trx
      .updateTable('toolCalls')
      .set({ status: 'cancelled', approval: 'cancelled', decidedAt: at })
      .where('actionId', '=', actionId)
      .where('status', '=', 'staged')
      .execute(),

  find: (db: Kysely<DB>, orgId: string, actionId: string, toolCallId: string) =>
    db
      .selectFrom('toolCalls')
      .selectAll()
      .where('orgId', '=', orgId)
      .where('actionId', '=', actionId)
      .where('toolCallId', '=', toolCallId)
      .executeTakeFirst(),

  findById: (db: Kysely<DB>, id: string) => db.selectFrom('toolCalls').selectAll().where('id', '=', id).executeTakeFirst(),

  /** The org's calls that needed approval, newest first, with their action's run-as user. */
  /** The calls that needed approval; with `namedUserId`, only those of rules that name that member among their approvers. */
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
      .selectAll('t')
      .select(['a.runAsUserId', 'a.status as actionStatus', 'a.eventType'])
      .where('t.orgId', '=', orgId)
      .where('t.approval', '=', query.approval)
      .$if(query.namedUserId !== undefined, (q) =>
        q.where((eb) =>
          eb.exists(
            eb
              .selectFrom('actionRules as r')
              .whereRef('r.id', '=', 'a.actionRuleId')
              .where(sql<boolean>`r.approvers -> 'userIds' @> ${JSON.stringify([query.namedUserId])}::jsonb`)
              .select('r.id'),
          ),
        ),
      )
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 't.requestedAt', 't.id')))
      .orderBy('t.requestedAt', 'desc')
      .orderBy('t.id', 'desc')
      .limit(limit + 1)
      .execute(),
};
