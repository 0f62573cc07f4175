import { describe, expect, it } from 'vitest';
import { type ComparedCall, compareRuns, type RunRecord } from './experiment-record.ts';
import { differenceSchema } from './experiments.schemas.ts';

const run = (status: string, finalText: string | null, toolCalls: ComparedCall[]): RunRecord => ({
  status,
  finalText,
  toolCalls,
  approvalsNeeded: toolCalls.filter((call) => call.approval).length,
  error: null,
  steps: 2,
  inputTokens: 10,
  outputTokens: 5,
  costUsd: null,
});
const call = (toolName: string, args: unknown, approval: string | null = null): ComparedCall => ({
  toolName,
  arguments: args,
  mode: approval ? 'ask' : 'allow',
  approval,
});

/** A value as jsonb gives it back: every object's keys shortest first, then bytewise (`to`, `from`, `path`). */
function asJsonb(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asJsonb);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((key) => [key, asJsonb((value as Record<string, unknown>)[key])]));
}

describe("an experiment result's differences, as the API gives them", () => {
  it('come back from jsonb with their keys in reading order, and an argument only one run had has no from or to', () => {
    const baseline = run('completed', 'Refunded.', [
      call('refund', { orderId: 'A-1', amount: 180, note: 'late' }, 'argument rule 1: /amount gt 150'),
      call('lookup', { orderId: 'A-1' }),
    ]);
    const candidate = run('failed', null, [
      call('refund', { orderId: 'A-1', amount: 100, reason: 'policy' }),
      call('notify', { to: 'ops' }, "the tool's mode is ask"),
    ]);
    const { differences } = compareRuns(baseline, candidate);
    const stored = asJsonb(JSON.parse(JSON.stringify(differences))) as unknown[];
    const given = stored.map((difference) => differenceSchema.parse(difference));
    expect(JSON.stringify(given)).toBe(
      JSON.stringify([
        {
          kind: 'arguments_changed',
          toolName: 'refund',
          changes: [
            { path: '/amount', from: 180, to: 100 },
            { path: '/note', from: 'late' },
            { path: '/reason', to: 'policy' },
          ],
        },
        { kind: 'approval_no_longer_needed', toolName: 'refund', reason: 'argument rule 1: /amount gt 150' },
        { kind: 'tool_call_added', toolName: 'notify', arguments: { to: 'ops' } },
        { kind: 'approval_needed_now', toolName: 'notify', reason: "the tool's mode is ask" },
        { kind: 'tool_call_missing', toolName: 'lookup', arguments: { orderId: 'A-1' } },
        { kind: 'final_text_changed', from: 'Refunded.', to: null },
        { kind: 'status_changed', from: 'completed', to: 'failed' },
      ]),
    );
  });
});
