import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ToolCallRow } from '../../db/schema.ts';
import { orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import { orgOf, userOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  APPROVAL_STATES,
  type ApprovalState,
  approvalSchema,
  approveBody,
  callParams,
  decisionResult,
  errors,
  rejectBody,
  respondBody,
} from './approvals.schemas.ts';
import type { ApprovalsService, Decider } from './approvals.service.ts';
import type { DecidedCall } from './standing-approvals.ts';

/** The signed-in person, and the channel: the console signs in with its cookie, API clients with a bearer token. */
const deciderOf = (request: FastifyRequest): Decider => ({
  userId: userOf(request).id,
  channel: request.sessionSource === 'cookie' ? 'console' : 'api',
});
const toDecision = (row: ToolCallRow & Pick<DecidedCall, 'approvalsRequired' | 'approvals'>) => ({
  toolCallId: row.toolCallId,
  actionId: row.actionId,
  toolName: row.toolName,
  status: row.approval as ApprovalState,
  decidedBy: row.decidedByUserId,
  decidedAt: row.decidedAt,
  reason: row.decisionReason,
  channel: row.decisionChannel,
  approvalsRequired: row.approvalsRequired,
  approvals: row.approvals,
  approvedInput: row.approvedInput ?? null,
});
const toApproval = (row: Awaited<ReturnType<ApprovalsService['list']>>['approvals'][number]) => ({
  ...toDecision(row),
  input: row.input,
  mode: row.mode,
  runAsUserId: row.runAsUserId,
  eventType: row.eventType,
  externalId: row.externalId,
  email: row.email,
  requestedAt: row.requestedAt,
  expiresAt: row.expiresAt,
  modeSource: row.modeSource ?? null,
  stagedReason: row.stagedReason,
});

/** The console's and the API's channel: each route translates a request into one decision of the approvals service. */
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
          "Approve a staged tool call: it runs (with `arguments`, with those in place of the model's) and the action " +
            "continues, once the rule's minApprovals distinct approvers have approved it",
          approveBody,
        ),
        preHandler,
      },
      async (request) => {
        const { actionId, toolCallId } = request.params;
        const body = request.body as z.infer<typeof approveBody>;
        const edit = { arguments: body.arguments, reason: body.reason ?? null };
        return toDecision(await deps.approvals.approve(orgOf(request).id, actionId, toolCallId, deciderOf(request), edit));
      },
    );
    app.post(
      '/orgs/:org/actions/:actionId/tool-calls/:toolCallId/respond',
      {
        schema: decisionSchema(
          'sendBackToolCall',
          'Send a staged tool call back with guidance: it is not run; the model gets the message as its result and goes on',
          respondBody,
        ),
        preHandler,
      },
      async (request) => {
        const { actionId, toolCallId } = request.params;
        const { message } = request.body as z.infer<typeof respondBody>;
        return toDecision(await deps.approvals.sendBack(orgOf(request).id, actionId, toolCallId, deciderOf(request), message));
      },
    );
    app.post(
      '/orgs/:org/actions/:actionId/tool-calls/:toolCallId/reject',
      {
        schema: decisionSchema('rejectToolCall', 'Reject a staged tool call: the action ends rejected', rejectBody),
        preHandler,
      },
      async (request) => {
        const { actionId, toolCallId } = request.params;
        const { reason } = request.body as z.infer<typeof rejectBody>;
        return toDecision(
          await deps.approvals.reject(orgOf(request).id, actionId, toolCallId, deciderOf(request), reason ?? null),
        );
      },
    );
  };
}
