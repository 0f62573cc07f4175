import type { ToolCallApproval, ToolCallRow } from '../../db/schema.ts';

/** What a decision did, as callbacks and the ledger name it (from the call's approval). */
const DECISION_KINDS: Partial<Record<ToolCallApproval, string>> = {
  approved: 'approve',
  rejected: 'reject',
  expired: 'expire',
  sent_back: 'send_back',
};

/**
 * A decision as the ledger's lifecycle and the approved/rejected callbacks carry it. The runner needs it too (a
 * decision it reads while settling a step), so it lives with the tool calls, not with the approvals that write it.
 */
export function decisionData(row: ToolCallRow) {
  return {
    toolCallId: row.toolCallId,
    toolName: row.toolName,
    decidedBy: row.decidedByUserId,
    approverId: row.decidedByUserId,
    channel: row.decisionChannel,
    decidedAt: row.decidedAt,
    reason: row.decisionReason,
    kind: DECISION_KINDS[row.approval] ?? null,
    argumentsEdited: row.approvedInput !== null && row.approvedInput !== undefined,
  };
}

/** What the model sees of a call a person edited: the result, and that it ran with other arguments than it proposed. */
export function withReviewerNote(output: unknown, args: unknown): unknown {
  const note = `A reviewer changed the arguments of this call before approving it; it ran with ${JSON.stringify(args)}`;
  const result = output as { type?: string; value?: unknown };
  if (result?.type === 'json') return { type: 'json', value: { note, result: result.value } };
  if (result?.type === 'error-text') return { type: 'error-text', value: `${note}. ${String(result.value)}` };
  return output;
}
