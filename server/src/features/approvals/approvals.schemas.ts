import { z } from 'zod';
import { DECISION_CHANNELS, TOOL_CALL_APPROVALS, type ToolCallApproval } from '../../db/schema.ts';
import { errorSchema, orgParams } from '../../lib/http-schemas.ts';
import { MAX_DECISION_REASON_CHARS } from './approvals.service.ts';

export const errors = {
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
  409: errorSchema,
  422: errorSchema,
};
/** A staged call's approval states (a call that needed none is not listed here). */
export const APPROVAL_STATES = TOOL_CALL_APPROVALS.filter((state) => state !== 'not_required') as [
  Exclude<ToolCallApproval, 'not_required'>,
  ...Exclude<ToolCallApproval, 'not_required'>[],
];
export type ApprovalState = (typeof APPROVAL_STATES)[number];

const channelSchema = z
  .enum(DECISION_CHANNELS)
  .nullable()
  .describe(
    'How the decision was made: console, api, email_link, email_reply, slack; null while pending, or when the deadline decided',
  );

/** One approver's approval of a call (a rule's minApprovals may ask for several). */
export const approvalRecordSchema = z
  .object({
    approverId: z.uuid().nullable(),
    channel: z.enum(DECISION_CHANNELS),
    at: z.date(),
    argumentsEdited: z.boolean().describe("Whether the arguments approved were a person's edit, not the model's"),
    reason: z.string().nullable().describe('What the approver wrote with the approval (why an edit, say); null: nothing'),
  })
  .meta({ id: 'ApprovalRecord' });

/** How many approvals a call needs, and those that count (an edit that changed the arguments started them again). */
const approvalCount = {
  approvalsRequired: z
    .number()
    .int()
    .describe("How many distinct approvers must approve it (minApprovals of its action rule, or of its inbox's assignment)"),
  approvals: z
    .array(approvalRecordSchema)
    .describe('The approvals that count so far, oldest first; the call runs once there are approvalsRequired of them'),
  approvedInput: z
    .unknown()
    .describe("The arguments an approver edited, which it runs with once approved (null: the model's, in `input`)"),
};

const decisionFields = {
  toolCallId: z.string(),
  actionId: z.uuid(),
  toolName: z.string(),
  status: z.enum(APPROVAL_STATES),
  decidedBy: z.uuid().nullable(),
  decidedAt: z.date().nullable(),
  reason: z.string().nullable(),
  channel: channelSchema,
  ...approvalCount,
};

export const approvalSchema = z
  .object({
    ...decisionFields,
    input: z.unknown().describe("The model's arguments"),
    mode: z.string().describe('`ask`, or `agent` when the agent asked for approval'),
    runAsUserId: z.uuid().nullable(),
    eventType: z.string(),
    externalId: z.string().nullable().describe("The action's `externalId`, as its sender gave it"),
    email: z
      .object({ from: z.string(), subject: z.string() })
      .nullable()
      .describe("An inbox's action: the email it answers (its sender and subject); null for a webhook's"),
    requestedAt: z.date(),
    expiresAt: z.date().nullable(),
    modeSource: z
      .unknown()
      .describe(
        'What sent the call to a human: the rule, an override, the default, or an argument rule (`{ source, index, rule }`)',
      ),
    stagedReason: z
      .string()
      .nullable()
      .describe(
        'Set when the call waits for another reason than its mode: an interrupted call (approve runs it again; reject ' +
          'lets the run go on with an error as its result)',
      ),
  })
  .meta({ id: 'Approval' });

export const callParams = orgParams.extend({ actionId: z.uuid(), toolCallId: z.string().min(1).max(200) });

/** The call after a decision; an approval that is not the last one needed leaves it `pending`. */
export const decisionResult = z.object(decisionFields);

const reason = z.string().trim().min(1).max(MAX_DECISION_REASON_CHARS);

export const approveBody = z
  .object({
    arguments: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "Run it with these instead of the model's: checked against the tool's input schema (400) and the rule's " +
          'argument rules (a `deny` one: 422); the call waits on if refused. With minApprovals over 1, arguments that ' +
          'differ from those approved so far start the approvals again',
      ),
    reason: reason.optional(),
  })
  .prefault({});

export const respondBody = z.object({
  message: reason.describe('What the agent should do instead (1 to 2000 characters)'),
});

export const rejectBody = z.object({ reason: reason.optional() }).prefault({});
