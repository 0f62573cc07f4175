import type { Kysely } from 'kysely';
import type { DB, ToolCallRow } from '../../db/schema.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import { BUDGET_APPROVAL } from '../actions/budget-hold.ts';
import { experimentsRepo } from './experiments.repo.ts';
import { type RunRecord, whyWaits } from './experiment-record.ts';

/** A call a person had to decide (or that waited): approved, rejected, expired, still waiting. */
const neededApproval = (call: ToolCallRow) => call.approval !== 'not_required';

/** What the original run of an action did, from its record: the experiment's baseline. */
export async function baselineOf(db: Kysely<DB>, actionId: string): Promise<{ record: RunRecord; calls: ToolCallRow[] }> {
  const [action, rows, usage] = await Promise.all([
    experimentsRepo.actionRecord(db, actionId),
    toolCallsRepo.forAction(db, actionId),
    experimentsRepo.actionUsage(db, actionId),
  ]);
  // A run over its budget waited for a person too, but that is the budget's, not the agent's, doing.
  const calls = rows.filter((row) => row.toolName !== BUDGET_APPROVAL);
  const result = action?.result as { text?: unknown } | null | undefined;
  return {
    calls,
    record: {
      status: action?.status ?? 'failed',
      toolCalls: calls.map((call) => ({
        toolName: call.toolName,
        arguments: call.input ?? null,
        mode: call.mode,
        approval: neededApproval(call) ? whyWaits(call) : null,
        status: call.status,
        ...(call.approvedInput !== null && call.approvedInput !== undefined && { approvedArguments: call.approvedInput }),
      })),
      approvalsNeeded: calls.filter(neededApproval).length,
      finalText: typeof result?.text === 'string' ? result.text : null,
      error: action?.error ?? null,
      steps: Number(action?.steps ?? 0),
      ...usage,
    },
  };
}
