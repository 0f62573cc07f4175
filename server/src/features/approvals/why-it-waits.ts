import type { ModeSource } from '../../db/schema.ts';
import { describeTest } from '../agents/argument-rules.ts';

/** Why a call waits, as the approver reads it. */
export function whyItWaits(call: { mode: string; modeSource: ModeSource | null; stagedReason: string | null }): string {
  if (call.stagedReason) return call.stagedReason;
  const source = call.modeSource;
  if (source?.source === 'argument_rule') {
    const { rule } = source;
    return `argument rule ${source.index + 1}: ${describeTest(rule)}`;
  }
  if (call.mode === 'agent') return 'the agent asked for approval';
  return source?.source === 'default'
    ? 'the rule does not list this tool (ask by default)'
    : `the rule's mode for this tool is ${call.mode}`;
}
