import type { Kysely } from 'kysely';
import type { DB, DecisionChannel, ToolCallRow } from '../../db/schema.ts';

/** An approval that counts towards the call's `minApprovals` (none superseded by a later edit). */
export const standingApproval = (row: {
  userId: string | null;
  channel: DecisionChannel;
  arguments: unknown;
  reason: string | null;
  createdAt: Date;
}) => ({
  approverId: row.userId,
  channel: row.channel,
  at: row.createdAt,
  argumentsEdited: row.arguments != null,
  reason: row.reason,
});

/** A call after a decision: its row, how many approvals it needs and those that stand. */
export type DecidedCall = ToolCallRow & { approvalsRequired: number; approvals: ReturnType<typeof standingApproval>[] };

/**
 * The approvals that stand, per call, oldest first: who (their email; their Slack user id when given
 * in Slack) and why. What the channels show the next approver; a read, never a decision.
 */
export const standingApprovers = (db: Kysely<DB>, toolCallRowIds: string[]) =>
  toolCallRowIds.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom('toolCallApprovals as a')
        .leftJoin('users as u', 'u.id', 'a.userId')
        .select(['a.toolCallId', 'a.externalUserId', 'a.reason', 'u.email'])
        .where('a.toolCallId', 'in', toolCallRowIds)
        .where('a.supersededAt', 'is', null)
        .orderBy('a.createdAt')
        .execute();
