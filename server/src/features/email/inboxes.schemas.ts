import { z } from 'zod';
import { orgParams } from '../../lib/http-schemas.ts';
import { NOTIFY_CHANNELS } from '../../db/schema.ts';
import {
  approvalModeSchema,
  approversOutput,
  argumentRulesInput,
  argumentRulesOutput,
  approversSchema,
  minApprovalsSchema,
  notifySchema,
  toolNameSchema,
} from '../agents/agents.schemas.ts';
import { patchSchema } from '../../lib/patch-schema.ts';

export const inboxInput = z.object({
  emailAddress: z
    .email()
    .max(320)
    .transform((address) => address.toLowerCase())
    .describe('An address on a verified domain of the provider; unique across all organizations'),
  displayName: z.string().trim().min(1).max(200),
});
export const inboxPatch = z.object({ displayName: z.string().trim().min(1).max(200) }).strict();
export type InboxInput = z.output<typeof inboxInput>;

export const assignmentInput = z.object({
  agentId: z.uuid(),
  isPrimary: z.boolean().default(false).describe('At most one primary agent per inbox: a new primary demotes the previous one'),
  autoRespond: z.boolean().default(false).describe('Answer every inbound message of the inbox with this agent'),
  approvalRules: z
    .record(toolNameSchema, approvalModeSchema)
    .nullable()
    .default(null)
    .describe('Approval mode per tool for this inbox; null: sendEmail `allow` for an auto-response, every other tool `ask`'),
  argumentRules: argumentRulesInput,
  approvers: approversSchema
    .default(null)
    .describe(
      "Who may decide this agent's calls on this inbox: `{ userIds?, role?: 'Admin' }`, as an action rule's; " +
        "null: the org's admins",
    ),
  minApprovals: minApprovalsSchema.describe(
    'How many distinct approvers must approve one of those calls before it runs (1 to 5); one rejection rejects it',
  ),
  notify: notifySchema.describe(
    "How the approvers of the inbox's calls are told that one of its actions waits: " +
      '`["email"]`, `["slack"]` or both (default: nobody is told; the console shows it)',
  ),
});
export type AssignmentInput = z.output<typeof assignmentInput>;
/** A change to an assignment: any of its settings but the agent; a new primary demotes the previous one. */
export const assignmentPatch = patchSchema(assignmentInput.omit({ agentId: true }));
export type AssignmentPatch = z.output<typeof assignmentPatch>;

export const assignmentSchema = z
  .object({
    agentId: z.uuid(),
    isPrimary: z.boolean(),
    autoRespond: z.boolean(),
    approvalRules: z.record(z.string(), approvalModeSchema).nullable(),
    argumentRules: argumentRulesOutput,
    approvers: approversOutput,
    minApprovals: z.number().int(),
    notify: z.array(z.enum(NOTIFY_CHANNELS)),
    assignedByUserId: z.uuid().nullable(),
    createdAt: z.date(),
  })
  .meta({ id: 'InboxAgentAssignment' });

export const inboxSchema = z
  .object({
    id: z.uuid(),
    emailAddress: z.string(),
    displayName: z.string(),
    agents: z.array(assignmentSchema),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: 'EmailInbox' });
export type PublicInbox = z.infer<typeof inboxSchema>;

export const inboxParams = orgParams.extend({ inboxId: z.uuid() });
export const assignmentParams = inboxParams.extend({ agentId: z.uuid() });
