import { z } from 'zod';
import { APPROVAL_MODES, MODEL_PROVIDERS } from '../../db/schema.ts';
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
  approvalTimeoutSeconds: z.number(),
  createdAt: z.date(),
  updatedAt: z.date(),
});

export const agentParams = orgParams.extend({ agentId: z.uuid() });
export const ruleParams = orgParams.extend({ ruleId: z.uuid() });
