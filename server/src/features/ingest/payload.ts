import { z } from 'zod';
import type { ApprovalMode } from '../../db/schema.ts';
import { APPROVAL_MODES } from '../../db/schema.ts';
import { TOOL_NAME } from '../agents/agents.schemas.ts';

/**
 * Any JSON object, checked without visiting its entries: a record schema validates every key, a
 * third of a second for 200,000 of them. What the entries may hold is json-input.ts's rule.
 */
const jsonObject = z
  .custom<Record<string, unknown>>(
    (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
    'expected an object',
  )
  .meta({ type: 'object', additionalProperties: {} });

/** ActionWebhookPayload. Unknown top-level fields are ignored. */
export const actionWebhookPayload = z.object({
  eventType: z.string().trim().min(1).max(200),
  externalId: z.string().min(1).max(500).optional(),
  userId: z.string().min(1).max(500).optional(),
  authProvider: z.string().min(1).max(100).optional(),
  actionRuleId: z.string().min(1).max(100).optional(),
  instructions: z.string().max(50_000).optional(),
  toolApprovals: z.record(z.string().max(100), z.unknown()).optional(),
  data: jsonObject.optional(),
});
export type ActionWebhookPayload = z.infer<typeof actionWebhookPayload>;

/**
 * Per-request approval overrides: kept only when the webhook allows them; entries with an invalid
 * mode, or a key that cannot name a tool, are dropped; unknown tool names are kept (ignored at run time).
 */
export function requestToolApprovals(payload: ActionWebhookPayload, allowOverrides: boolean): Record<string, ApprovalMode> {
  if (!allowOverrides || !payload.toolApprovals) return {};
  const kept: Record<string, ApprovalMode> = {};
  for (const [tool, mode] of Object.entries(payload.toolApprovals)) {
    if (TOOL_NAME.test(tool) && typeof mode === 'string' && (APPROVAL_MODES as readonly string[]).includes(mode))
      kept[tool] = mode as ApprovalMode;
  }
  return kept;
}

/** `*` matches any run of characters; no patterns means every event type. */
export function eventFilterMatcher(patterns: string[]): (eventType: string) => boolean {
  if (patterns.length === 0) return () => true;
  const regexes = patterns.map(
    (pattern) =>
      new RegExp(
        `^${pattern
          .split('*')
          .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
          .join('.*')}$`,
      ),
  );
  return (eventType) => regexes.some((regex) => regex.test(eventType));
}
