import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import type { ExperimentOutcome, ModeSource, ToolCallMode } from '../../db/schema.ts';
import { describeTest } from '../agents/argument-rules.ts';
import type { differenceSchema } from './experiments.schemas.ts';

/** How a replayed call got the result the model saw next. */
export type ReplayedAs = 'recorded' | 'not_executed' | 'live' | 'denied' | 'no_such_tool';

/** One tool call as an experiment compares it: what was proposed, and whether a person would have had to approve it. */
export interface ComparedCall {
  toolName: string;
  arguments: unknown;
  mode: ToolCallMode;
  /** Why it waits (would have waited) for a person; null: it ran (would run) without one. */
  approval: string | null;
  /** Baseline: how the call ended (completed, failed, rejected, denied, ...). */
  status?: string;
  /** Baseline: the arguments an approver edited the call to; `arguments` stays what the model proposed, which is compared. */
  approvedArguments?: unknown;
  /** Candidate: how it got its result. */
  replayed?: ReplayedAs;
}

/** What one run of an action did: the original's (baseline) or the candidate version's replay. */
export interface RunRecord {
  /** completed, failed, rejected, expired (the baseline) / completed or failed (the candidate). */
  status: string;
  toolCalls: ComparedCall[];
  approvalsNeeded: number;
  finalText: string | null;
  error: string | null;
  steps: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

/** One difference between the runs; its schema gives the order a person reads its keys in. */
export type Difference = z.output<typeof differenceSchema>;

/** Why a call waits for a person, in words: "argument rule 1: /amount gt 100". */
export function whyWaits(call: { mode: ToolCallMode; modeSource: ModeSource | null; stagedReason: string | null }): string {
  if (call.stagedReason) return call.stagedReason;
  const source = call.modeSource;
  if (source?.source === 'argument_rule') return `argument rule ${source.index + 1}: ${describeTest(source.rule)}`;
  if (call.mode === 'agent') return 'the agent asked for approval (agent mode)';
  return `the tool's mode is ${call.mode}${source ? ` (${source.source})` : ''}`;
}

/** RFC 6901: `~` and `/` in a key are escaped. */
const pointerStep = (key: string | number) => `/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;

/** Each place where two JSON values differ, as a JSON Pointer with the value on each side (absent: undefined). */
export function jsonChanges(from: unknown, to: unknown, path = ''): Array<{ path: string; from: unknown; to: unknown }> {
  const bothObjects =
    from !== null &&
    to !== null &&
    typeof from === 'object' &&
    typeof to === 'object' &&
    Array.isArray(from) === Array.isArray(to);
  if (!bothObjects) return isDeepStrictEqual(from, to) ? [] : [{ path, from, to }];
  const left = from as Record<string, unknown>;
  const right = to as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])];
  return keys.flatMap((key) => jsonChanges(left[key], right[key], `${path}${pointerStep(key)}`));
}

/**
 * What changed from the baseline to the candidate, and the outcome: `failed` when the replay could
 * not finish, `changed` when anything differs, else `same`. Calls are paired in order by tool: the
 * first unpaired call of the same tool on the other side.
 */
export function compareRuns(
  baseline: RunRecord,
  candidate: RunRecord,
): { outcome: ExperimentOutcome; differences: Difference[] } {
  const differences: Difference[] = [];
  const unpaired = [...baseline.toolCalls];
  for (const call of candidate.toolCalls) {
    const index = unpaired.findIndex((original) => original.toolName === call.toolName);
    if (index === -1) {
      differences.push({ kind: 'tool_call_added', toolName: call.toolName, arguments: call.arguments });
      if (call.approval) differences.push({ kind: 'approval_needed_now', toolName: call.toolName, reason: call.approval });
      continue;
    }
    const [original] = unpaired.splice(index, 1) as [ComparedCall];
    const changes = jsonChanges(original.arguments, call.arguments);
    if (changes.length > 0) differences.push({ kind: 'arguments_changed', toolName: call.toolName, changes });
    if (call.approval && !original.approval)
      differences.push({ kind: 'approval_needed_now', toolName: call.toolName, reason: call.approval });
    if (!call.approval && original.approval)
      differences.push({ kind: 'approval_no_longer_needed', toolName: call.toolName, reason: original.approval });
  }
  for (const original of unpaired)
    differences.push({ kind: 'tool_call_missing', toolName: original.toolName, arguments: original.arguments });
  if (baseline.finalText !== candidate.finalText)
    differences.push({ kind: 'final_text_changed', from: baseline.finalText, to: candidate.finalText });
  if (baseline.status !== candidate.status)
    differences.push({ kind: 'status_changed', from: baseline.status, to: candidate.status });
  const outcome = candidate.status === 'failed' ? 'failed' : differences.length > 0 ? 'changed' : 'same';
  return { outcome, differences };
}
