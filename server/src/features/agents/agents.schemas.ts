import { z } from 'zod';
import { APPROVAL_MODES, ARGUMENT_RULE_OPS, MODEL_PROVIDERS, NOTIFY_CHANNELS } from '../../db/schema.ts';
import { argumentRuleSchema } from './argument-rules.ts';
import { orgParams } from '../../lib/http-schemas.ts';
import { patchSchema } from '../../lib/patch-schema.ts';
import { budgetSchema } from '../usage/usage.schemas.ts';

export const approvalModeSchema = z.enum(APPROVAL_MODES);
/** A tool's name: what the model providers accept as a function name. The one rule for tool names. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const toolNameSchema = z.string().regex(TOOL_NAME, 'a tool name: letters, digits, _ and - only, at most 64');

export const changeNoteSchema = z
  .string()
  .trim()
  .max(2000)
  .nullable()
  .default(null)
  .describe('Why the version this makes was made (kept with it)');

export const agentInput = z.object({
  name: z.string().trim().min(1).max(200),
  instructions: z.string().max(50_000).default(''),
  provider: z
    .enum(MODEL_PROVIDERS)
    .nullable()
    .default(null)
    .describe("The model provider; null uses the server's MODEL_PROVIDER"),
  model: z
    .string()
    .trim()
    .min(1, "model names no model: give its name, or null for the server's MODEL_NAME")
    .max(200)
    .nullable()
    .default(null)
    .describe("The model name; null uses the server's MODEL_NAME"),
  tools: z.array(toolNameSchema).max(100).default([]).describe('Names of the tools the agent may call (e.g. generateDocument)'),
  budget: budgetSchema
    .nullable()
    .default(null)
    .describe("The agent's budget per UTC day or month, checked before each of its model calls (null: none but the org's)"),
  changeNote: changeNoteSchema,
});
export const agentPatch = patchSchema(agentInput);

export const agentSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  instructions: z.string(),
  provider: z.enum(MODEL_PROVIDERS).nullable(),
  model: z.string().nullable(),
  tools: z.array(z.string()),
  budget: budgetSchema.nullable(),
  liveVersion: z.int().describe('The version new actions run with (instructions, provider, model and tools are its)'),
  createdAt: z.date(),
  updatedAt: z.date(),
});

/** Who decides a rule's staged calls: named members, every admin, or both (null: the org's admins). */
export const approversSchema = z
  .object({
    userIds: z.array(z.uuid()).max(50).optional().describe('Members of the org who may decide'),
    role: z.literal('Admin').optional().describe('Every admin of the org may decide'),
  })
  .strict()
  .refine((value) => (value.userIds?.length ?? 0) > 0 || value.role !== undefined, 'name at least one user, or the role')
  .nullable();

/**
 * How approvers are told that a call waits (an action rule's, an inbox assignment's): each channel
 * once, a channel named twice kept once (the bound is for a list gone wrong, not for a repeat).
 */
export const notifySchema = z
  .array(z.enum(NOTIFY_CHANNELS))
  .max(10)
  .default([])
  .transform((channels) => [...new Set(channels)]);

/** How many distinct approvers must approve a call before it runs (an action rule's, an inbox assignment's). */
export const minApprovalsSchema = z.number().int().min(1).max(5).default(1);
/** Who decides, as the API answers it (null: the org's admins). */
export const approversOutput = z
  .object({ userIds: z.array(z.uuid()).optional(), role: z.literal('Admin').optional() })
  .nullable();

/** Rules on a call's arguments that make it stricter (an action rule's, an inbox assignment's). */
export const argumentRulesInput = z
  .array(argumentRuleSchema)
  .max(50)
  .default([])
  .describe(
    "Rules on a call's arguments: `{ tool, path (JSON Pointer), op (eq, ne, gt, gte, lt, lte, in, matches, exists), " +
      'value, mode (ask or deny) }`. ' +
      "When one holds for a call, the stricter of its mode and the tool's applies (deny > ask > agent > allow)",
  );
export const argumentRulesOutput = z.array(
  z.object({
    tool: z.string(),
    path: z.string(),
    op: z.enum(ARGUMENT_RULE_OPS),
    value: z.unknown().optional(),
    mode: z.enum(['ask', 'deny']),
  }),
);

export const actionRuleInput = z.object({
  name: z.string().trim().min(1).max(200),
  agentId: z.uuid().nullable().default(null),
  instructions: z.string().max(50_000).default(''),
  enabled: z.boolean().default(true),
  approvalRules: z
    .record(toolNameSchema, approvalModeSchema)
    .default({})
    .describe('Default approval mode per tool; a tool not listed is `ask`'),
  argumentRules: argumentRulesInput,
  approvalTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(2_592_000)
    .default(86_400)
    .describe('How long a staged tool call waits for a decision before it expires'),
  approvers: approversSchema
    .default(null)
    .describe("Who may decide this rule's staged calls: `{ userIds?, role?: 'Admin' }`; null: the org's admins"),
  minApprovals: minApprovalsSchema.describe(
    'How many distinct approvers must approve a staged call before it runs (1 to 5); one rejection rejects it. ' +
      'An approver whose edit changes the arguments starts the approvals again',
  ),
  notify: notifySchema.describe(
    'How approvers are told that a call waits: `["email"]` mails each of them (default: nobody is told)',
  ),
});
export const actionRulePatch = patchSchema(actionRuleInput);

export const actionRuleSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  agentId: z.uuid().nullable(),
  instructions: z.string(),
  enabled: z.boolean(),
  approvalRules: z.record(z.string(), approvalModeSchema),
  argumentRules: argumentRulesOutput,
  approvalTimeoutSeconds: z.number(),
  approvers: approversOutput,
  minApprovals: z.number().int(),
  notify: z.array(z.enum(NOTIFY_CHANNELS)),
  createdAt: z.date(),
  updatedAt: z.date(),
});

/** What an MCP server says of a tool's behaviour (hints, not guarantees). */
export const toolAnnotationsSchema = z.object({
  title: z.string().optional(),
  readOnlyHint: z.boolean().optional(),
  destructiveHint: z.boolean().optional(),
  idempotentHint: z.boolean().optional(),
  openWorldHint: z.boolean().optional(),
});

/** A tool as the org's agents can be given it: built in (no server), or one of its MCP servers'. */
export const listedToolSchema = z.object({
  name: z.string(),
  description: z.string(),
  inputSchema: z
    .record(z.string(), z.unknown())
    .describe("The tool's input as JSON Schema (what the model sees; an approver's edit is checked against it)"),
  server: z
    .object({
      id: z.uuid(),
      name: z.string(),
      tool: z.string().describe("The server's own name for the tool"),
      annotations: toolAnnotationsSchema,
    })
    .nullable(),
});

export const agentParams = orgParams.extend({ agentId: z.uuid() });
export const ruleParams = orgParams.extend({ ruleId: z.uuid() });
