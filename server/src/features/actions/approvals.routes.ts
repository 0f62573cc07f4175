import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { paginationQuery } from '../../lib/pagination.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import { DECISION_CHANNELS, TOOL_CALL_APPROVALS, type ToolCallApproval, type ToolCallRow } from '../../db/schema.ts';
import { type ApprovalsService, type Decider, MAX_DECISION_REASON_CHARS } from './approvals.service.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf, userOf } from '../../lib/request-context.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema, 422: errorSchema };
/** A staged call's approval states (a call that needed none is not listed here). */
const APPROVAL_STATES = TOOL_CALL_APPROVALS.filter((state) => state !== 'not_required') as [
  Exclude<ToolCallApproval, 'not_required'>,
  ...Exclude<ToolCallApproval, 'not_required'>[],
];

const approvalSchema = z
  .object({
    toolCallId: z.string(),
    actionId: z.uuid(),
    toolName: z.string(),
    input: z.unknown(),
    mode: z.string().describe('`ask`, or `agent` when the agent asked for approval'),
    status: z.enum(APPROVAL_STATES),
    runAsUserId: z.uuid().nullable(),
    eventType: z.string(),
    requestedAt: z.date(),
    expiresAt: z.date().nullable(),
    decidedBy: z.uuid().nullable(),
    decidedAt: z.date().nullable(),
    reason: z.string().nullable(),
    channel: z
      .enum(DECISION_CHANNELS)
      .nullable()
      .describe(
        'How the decision was made: console, api, email_link, email_reply; null while pending, or when the deadline decided',
      ),
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

type Status = (typeof APPROVAL_STATES)[number];
/** The signed-in person, and the channel: the console signs in with its cookie, API clients with a bearer token. */
const deciderOf = (request: FastifyRequest): Decider => ({
  userId: userOf(request).id,
  channel: request.sessionSource === 'cookie' ? 'console' : 'api',
});
const toDecision = (row: ToolCallRow) => ({
  toolCallId: row.toolCallId,
  actionId: row.actionId,
  toolName: row.toolName,
  status: row.approval as Status,
  decidedBy: row.decidedByUserId,
  decidedAt: row.decidedAt,
  reason: row.decisionReason,
  channel: row.decisionChannel,
});
const toApproval = (row: Awaited<ReturnType<ApprovalsService['list']>>['approvals'][number]) => ({
  ...toDecision(row),
  input: row.input,
  mode: row.mode,
  runAsUserId: row.runAsUserId,
  eventType: row.eventType,
  requestedAt: row.requestedAt,
  expiresAt: row.expiresAt,
  modeSource: row.modeSource ?? null,
  stagedReason: row.stagedReason,
});

const callParams = orgParams.extend({ actionId: z.uuid(), toolCallId: z.string().min(1).max(200) });
const decisionResult = z.object({
  toolCallId: z.string(),
  actionId: z.uuid(),
  toolName: z.string(),
  status: z.enum(APPROVAL_STATES),
  decidedBy: z.uuid().nullable(),
  decidedAt: z.date().nullable(),
  reason: z.string().nullable(),
  channel: z
    .enum(DECISION_CHANNELS)
    .nullable()
    .describe(
      'How the decision was made: console, api, email_link, email_reply; null while pending, or when the deadline decided',
    ),
});

export function approvalsRoutes(deps: { approvals: ApprovalsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    // Any member: who may decide a call is its rule's (approvals service), the same on every channel.
    const preHandler = deps.orgAccess('Guest');
    const common = { tags: ['approvals'], security: sessionSecurity };

    app.get(
      '/orgs/:org/approvals',
      {
        schema: {
          operationId: 'listApprovals',
          ...common,
          summary:
            'Tool calls that needed approval, newest first (default: the pending ones); a member who is not an admin sees ' +
            'those of the rules that name them',
          params: orgParams,
          querystring: paginationQuery.extend({ status: z.enum(APPROVAL_STATES).default('pending') }),
          response: { 200: z.object({ approvals: z.array(approvalSchema), nextCursor: z.string().nullable() }), ...errors },
        },
        preHandler,
      },
      async (request) => {
        const page = await deps.approvals.list(orgOf(request).id, userOf(request), request.query);
        return { approvals: page.approvals.map(toApproval), nextCursor: page.nextCursor };
      },
    );

    const decisionSchema = (operationId: string, summary: string, body: z.ZodType) => ({
      ...common,
      operationId,
      summary,
      params: callParams,
      body,
      response: { 200: decisionResult, ...errors },
    });
    app.post(
      '/orgs/:org/actions/:actionId/tool-calls/:toolCallId/approve',
      {
        schema: decisionSchema(
          'approveToolCall',
          "Approve a staged tool call: it runs (with `arguments`, with those in place of the model's) and the action continues",
          z
            .object({
              arguments: z
                .record(z.string(), z.unknown())
                .optional()
                .describe(
                  "Run it with these instead of the model's: checked against the tool's input schema (400) and the rule's " +
                    'argument rules (a `deny` one: 422); the call waits on if refused',
                ),
              reason: z.string().trim().min(1).max(MAX_DECISION_REASON_CHARS).optional(),
            })
            .prefault({}),
        ),
        preHandler,
      },
      async (request) => {
        const { actionId, toolCallId } = request.params;
        const body = request.body as { arguments?: Record<string, unknown>; reason?: string };
        return toDecision(
          await deps.approvals.approve(orgOf(request).id, actionId, toolCallId, deciderOf(request), {
            arguments: body.arguments,
            reason: body.reason ?? null,
          }),
        );
      },
    );
    app.post(
      '/orgs/:org/actions/:actionId/tool-calls/:toolCallId/respond',
      {
        schema: decisionSchema(
          'sendBackToolCall',
          'Send a staged tool call back with guidance: it is not run; the model gets the message as its result and goes on',
          z.object({
            message: z
              .string()
              .trim()
              .min(1)
              .max(MAX_DECISION_REASON_CHARS)
              .describe('What the agent should do instead (1 to 2000 characters)'),
          }),
        ),
        preHandler,
      },
      async (request) => {
        const { actionId, toolCallId } = request.params;
        const { message } = request.body as { message: string };
        return toDecision(await deps.approvals.sendBack(orgOf(request).id, actionId, toolCallId, deciderOf(request), message));
      },
    );
    app.post(
      '/orgs/:org/actions/:actionId/tool-calls/:toolCallId/reject',
      {
        schema: decisionSchema(
          'rejectToolCall',
          'Reject a staged tool call: the action ends rejected',
          z.object({ reason: z.string().trim().min(1).max(MAX_DECISION_REASON_CHARS).optional() }).prefault({}),
        ),
        preHandler,
      },
      async (request) => {
        const body = request.body as { reason?: string };
        return toDecision(
          await deps.approvals.reject(
            orgOf(request).id,
            request.params.actionId,
            request.params.toolCallId,
            deciderOf(request),
            body.reason ?? null,
          ),
        );
      },
    );
  };
}
