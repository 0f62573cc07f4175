import type { DecisionChannel, ToolCallRow } from '../../db/schema.ts';

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
