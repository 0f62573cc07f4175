import { z } from 'zod';
import type { ApprovalMode, ModeSource, ToolCallMode } from '../../db/schema.ts';
import { APPROVAL_MODES } from '../../db/schema.ts';

const isMode = (value: unknown): value is ApprovalMode => (APPROVAL_MODES as readonly unknown[]).includes(value);

/**
 * The mode of one tool call: the user's "always deny" beats everything; a
 * per-request override counts only while the webhook allows overrides; then the rule's default;
 * a tool the rule does not list is `ask`. Invalid modes anywhere are ignored. With the mode, which
 * of these decided it (the ledger shows it).
 */
export function resolveToolMode(input: {
  toolName: string;
  ruleDefaults: Record<string, unknown>;
  requestOverrides: Record<string, unknown>;
  allowOverrides: boolean;
  alwaysDeny: boolean;
}): { mode: ToolCallMode; source: ModeSource } {
  if (input.alwaysDeny) return { mode: 'deny', source: { source: 'preference' } };
  const override = Object.hasOwn(input.requestOverrides, input.toolName) ? input.requestOverrides[input.toolName] : undefined;
  if (input.allowOverrides && isMode(override)) return { mode: override, source: { source: 'override' } };
  const ruleDefault = Object.hasOwn(input.ruleDefaults, input.toolName) ? input.ruleDefaults[input.toolName] : undefined;
  return isMode(ruleDefault) ? { mode: ruleDefault, source: { source: 'rule' } } : { mode: 'ask', source: { source: 'default' } };
}

/** In `agent` mode the model must say, with every call, whether it needs a human's approval. */
export const APPROVAL_DECISION_FIELD = 'approvalDecision';
export const APPROVAL_DECISIONS = ['no_approval_needed', 'approval_needed', 'unsure'] as const;

/** The tool's input schema as the model sees it in `agent` mode: the tool's own, plus the required decision. */
export function withApprovalDecision(inputJsonSchema: Record<string, unknown>): Record<string, unknown> {
  const properties = (inputJsonSchema.properties as Record<string, unknown> | undefined) ?? {};
  const required = (inputJsonSchema.required as string[] | undefined) ?? [];
  return {
    ...inputJsonSchema,
    type: 'object',
    properties: {
      ...properties,
      [APPROVAL_DECISION_FIELD]: {
        type: 'string',
        enum: [...APPROVAL_DECISIONS],
        description:
          'Required. Decide from your approval policy: "no_approval_needed" runs the call now; "approval_needed" or ' +
          '"unsure" waits for a human.',
      },
    },
    required: [...required.filter((name) => name !== APPROVAL_DECISION_FIELD), APPROVAL_DECISION_FIELD],
  };
}

/**
 * Fail-closed reading of an `agent`-mode call: it runs at once only with an explicit, well-formed
 * "no approval needed"; anything else (needed, unsure, missing, malformed, unparsable input) waits.
 * Returns the input without the decision field, for the tool.
 */
export function readApprovalDecision(rawInput: unknown): { runNow: boolean; input: unknown } {
  if (typeof rawInput !== 'object' || rawInput === null || Array.isArray(rawInput)) return { runNow: false, input: rawInput };
  const { [APPROVAL_DECISION_FIELD]: decision, ...input } = rawInput as Record<string, unknown>;
  return { runNow: z.literal('no_approval_needed').safeParse(decision).success, input };
}

/** Added to the agent's instructions when some of its tools are in `agent` mode. */
export function agentModePolicy(toolNames: string[]): string {
  return [
    `Approval policy for the tools ${toolNames.map((name) => `"${name}"`).join(', ')}:`,
    `with every call of these tools set "${APPROVAL_DECISION_FIELD}".`,
    'Use "no_approval_needed" only when the call is clearly routine and within your instructions;',
    'use "approval_needed" when it is risky, irreversible, unusual or outside them, and "unsure" when in doubt.',
    'A call marked anything other than "no_approval_needed" waits for a human to approve it.',
  ].join(' ');
}
