import { z } from 'zod';
import { EXPERIMENT_OUTCOMES, EXPERIMENT_STATES } from '../../db/schema.ts';
import { orgParams } from '../../lib/http-schemas.ts';
import { instantSchema } from '../../lib/instants.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import { TERMINAL_STATUSES } from '../actions/lifecycle.ts';

export const MAX_EXPERIMENT_ACTIONS = 500;

export const experimentFilter = z
  .object({
    from: instantSchema.optional().describe('Actions created at or after this instant'),
    to: instantSchema.optional().describe('Actions created before this instant'),
    eventType: z.string().min(1).max(200).optional(),
    status: z.enum(TERMINAL_STATUSES).optional().describe('How the original action ended'),
  })
  .strict()
  .refine((filter) => !filter.from || !filter.to || filter.from < filter.to, { message: 'from must be before to', path: ['to'] });

export const experimentInput = z
  .object({
    version: z.int().min(1).describe("The agent's version to replay (a draft, the live one, or an older one)"),
    actionIds: z
      .array(z.uuid())
      .min(1)
      .max(MAX_EXPERIMENT_ACTIONS)
      .optional()
      .describe('Past actions of this agent to replay (finished ones); with `filter`, those of them that match it'),
    filter: experimentFilter.optional().describe("Selects the agent's finished actions, newest first"),
    limit: z
      .int()
      .min(1)
      .max(MAX_EXPERIMENT_ACTIONS)
      .optional()
      .describe(`At most this many actions (default: 50, or as many as actionIds names; at most ${MAX_EXPERIMENT_ACTIONS})`),
    liveReadOnlyTools: z
      .boolean()
      .default(false)
      .describe('Call MCP tools their server annotates read-only for real (any other tool is never run)'),
  })
  .strict();

const sideTotals = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number().nullable(),
  approvalsNeeded: z.number().describe('Calls that waited (would have waited) for a person'),
});

const outcomeCounts = z.object({ same: z.int(), changed: z.int(), failed: z.int() });

export const experimentSchema = z.object({
  id: z.uuid(),
  agentId: z.uuid(),
  version: z.int(),
  state: z.enum(EXPERIMENT_STATES),
  liveReadOnlyTools: z.boolean(),
  selection: z.object({
    actionIds: z.array(z.uuid()).optional(),
    filter: z.record(z.string(), z.string()).optional(),
    limit: z.int(),
  }),
  progress: z.object({ total: z.int(), done: z.int() }),
  outcomes: outcomeCounts.describe('Its results stored so far, per outcome'),
  error: z.string().nullable().describe('Why it failed (a budget it reached)'),
  createdBy: z.uuid().nullable(),
  createdAt: z.date(),
  startedAt: z.date().nullable(),
  finishedAt: z.date().nullable(),
});

export const experimentSummarySchema = z.object({
  outcomes: outcomeCounts,
  baseline: sideTotals,
  candidate: sideTotals,
});

const comparedCall = z.object({
  toolName: z.string(),
  arguments: z.unknown(),
  mode: z.string(),
  approval: z.string().nullable().describe('Why it waited (would have waited) for a person; null: it did not'),
  status: z.string().optional().describe('Baseline: how the call ended'),
  approvedArguments: z
    .unknown()
    .optional()
    .describe(
      "Baseline: the arguments an approver edited the call to (what ran, when it was approved); `arguments` stays the model's",
    ),
  replayed: z
    .enum(['recorded', 'not_executed', 'live', 'denied', 'no_such_tool'])
    .optional()
    .describe("Candidate: the original call's recorded result, a stand-in (not executed), run for real (read-only), ..."),
});
const runRecord = z.object({
  status: z.string(),
  toolCalls: z.array(comparedCall),
  approvalsNeeded: z.int(),
  finalText: z.string().nullable(),
  error: z.string().nullable(),
  steps: z.int(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number().nullable(),
});

/**
 * One difference between the runs (experiment-record.ts derives its type from this). Stored as jsonb, whose keys come
 * back in its own order (`to`, `from`, `path`): the schema gives them in the order a person reads them.
 */
export const differenceSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal(['tool_call_added', 'tool_call_missing']),
    toolName: z.string(),
    arguments: z.unknown().optional().describe('The arguments of the call only one run made'),
  }),
  z.object({
    kind: z.literal('arguments_changed'),
    toolName: z.string(),
    changes: z.array(
      z.object({
        path: z.string().describe('JSON Pointer to the argument that changed'),
        from: z.unknown().optional().describe('In the original run (absent: it had none)'),
        to: z.unknown().optional().describe('In the candidate run (absent: it has none)'),
      }),
    ),
  }),
  z.object({
    kind: z.literal(['approval_needed_now', 'approval_no_longer_needed']),
    toolName: z.string(),
    reason: z.string().describe('Why the call waits (or waited) for a person'),
  }),
  z.object({ kind: z.literal('final_text_changed'), from: z.string().nullable(), to: z.string().nullable() }),
  z.object({ kind: z.literal('status_changed'), from: z.string(), to: z.string() }),
]);

export const experimentResultSchema = z.object({
  actionId: z.uuid(),
  eventType: z.string().describe("The original action's event type (`email.received` for an email's)"),
  externalId: z.string().nullable().describe("The original action's external id, as its sender gave it"),
  outcome: z.enum(EXPERIMENT_OUTCOMES),
  baseline: runRecord.describe('What the original run did'),
  candidate: runRecord.describe('What the candidate version did on the same input'),
  differences: z.array(differenceSchema).describe('How the candidate run differs from the original, in order'),
  finishedAt: z.date().nullable(),
});

export const experimentParams = orgParams.extend({ experimentId: z.uuid() });
export const experimentListQuery = paginationQuery.extend({ agentId: z.uuid().optional() });
export const experimentResultsQuery = paginationQuery.extend({ outcome: z.enum(EXPERIMENT_OUTCOMES).optional() });
