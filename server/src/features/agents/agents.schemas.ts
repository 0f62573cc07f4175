import { z } from 'zod';
import { APPROVAL_MODES, ARGUMENT_RULE_OPS, MODEL_PROVIDERS } from '../../db/schema.ts';
import { argumentRuleSchema } from './argument-rules.ts';
import { orgParams } from '../../lib/http-schemas.ts';
import { patchSchema } from '../../lib/patch-schema.ts';

export const approvalModeSchema = z.enum(APPROVAL_MODES);
/** A tool's name: what the model providers accept as a function name. The one rule for tool names. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const toolNameSchema = z.string().regex(TOOL_NAME, 'a tool name: letters, digits, _ and - only, at most 64');

export const agentInput = z.object({
  name: z.string().trim().min(1).max(200),
  instructions: z.string().max(50_000).default(''),
  provider: z.enum(MODEL_PROVIDERS).nullable().default(null).describe("The model provider; null uses the server's MODEL_PROVIDER"),
  model: z.string().max(200).nullable().default(null).describe("The model name; null uses the server's MODEL_NAME"),
  tools: z.array(toolNameSchema).max(100).default([]).describe('Names of the tools the agent may call (e.g. generateDocument)'),
});
export const agentPatch = patchSchema(agentInput);

export const agentSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  instructions: z.string(),
  provider: z.enum(MODEL_PROVIDERS).nullable(),
  model: z.string().nullable(),
  tools: z.array(z.string()),
  createdAt: z.date(),
  updatedAt: z.date(),
});

export const actionRuleInput = z.object({
  name: z.string().trim().min(1).max(200),
  agentId: z.uuid().nullable().default(null),
  instructions: z.string().max(50_000).default(''),
  enabled: z.boolean().default(true),
  approvalRules: z
    .record(toolNameSchema, approvalModeSchema)
    .default({})
    .describe('Default approval mode per tool; a tool not listed is `ask`'),
  argumentRules: z
    .array(argumentRuleSchema)
    .max(50)
    .default([])
    .describe(
      "Rules on a call's arguments: `{ tool, path (JSON Pointer), op (eq, ne, gt, gte, lt, lte, in, matches, exists), value, mode (ask or deny) }`. " +
        "When one holds for a call, the stricter of its mode and the tool's applies (deny > ask > agent > allow)",
    ),
  approvalTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(2_592_000)
    .default(86_400)
    .describe('How long a staged tool call waits for a decision before it expires'),
});
export const actionRulePatch = patchSchema(actionRuleInput);

export const actionRuleSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  agentId: z.uuid().nullable(),
  instructions: z.string(),
  enabled: z.boolean(),
  approvalRules: z.record(z.string(), approvalModeSchema),
  argumentRules: z.array(
    z.object({
      tool: z.string(),
      path: z.string(),
      op: z.enum(ARGUMENT_RULE_OPS),
      value: z.unknown().optional(),
      mode: z.enum(['ask', 'deny']),
    }),
  ),
  approvalTimeoutSeconds: z.number(),
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
