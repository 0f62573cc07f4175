import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { paginationQuery } from '../../lib/pagination.ts';
import { callbackDeliverySchema } from '../callbacks/callbacks.schemas.ts';
import { orgParams } from '../agents/agents.schemas.ts';
import { errorSchema, sessionSecurity } from '../auth/auth.schemas.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { DeliveriesService } from './deliveries.service.ts';
import type { LedgerService } from './ledger.service.ts';
import type { SendTest } from './send-test.ts';
import { secretRotated, webhookCreated, webhookInput, webhookParams, webhookPatch, webhookSchema } from './webhooks.schemas.ts';
import type { WebhooksService } from './webhooks.service.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema };

const ledgerRow = z.object({
  id: z.uuid(), kind: z.enum(['action', 'delivery']), eventId: z.uuid(), actionId: z.uuid().nullable(), webhookId: z.uuid().nullable(),
  eventType: z.string().nullable(), externalId: z.string().nullable(), status: z.string(), deliveryStatus: z.string(), reason: z.string().nullable(),
  approvalState: z.string().nullable(), replayable: z.boolean(), attempts: z.int(), nextAttemptAt: z.date().nullable(), createdAt: z.date(), summary: z.string(),
});
const ledgerDetail = ledgerRow.extend({
  ingressPayload: z.unknown(), rawBody: z.string().nullable(), headers: z.record(z.string(), z.string()), verificationScheme: z.string(),
  sourceIp: z.string().nullable(),
  lifecycleEvents: z.array(z.object({ status: z.string(), cause: z.string(), data: z.unknown(), at: z.date() })),
  execution: z.object({ runAsUserId: z.uuid().nullable(), agentId: z.uuid().nullable(), actionRuleId: z.uuid().nullable(), toolApprovals: z.record(z.string(), z.string()), result: z.unknown(), error: z.string().nullable(),
    threadId: z.uuid().nullable(),
    toolCalls: z.array(z.object({
      toolCallId: z.string(), toolName: z.string(), mode: z.string(), status: z.string(), approval: z.string(), input: z.unknown(), output: z.unknown(),
      requestedAt: z.date(), expiresAt: z.date().nullable(), decidedBy: z.uuid().nullable(), decidedAt: z.date().nullable(), reason: z.string().nullable(), completedAt: z.date().nullable(),
    })),
  }).nullable(),
  callbacks: z.array(callbackDeliverySchema),
});
const ledgerQuery = paginationQuery.extend({
  kind: z.enum(['action', 'delivery']).optional(),
  status: z.string().max(50).optional(),
  webhookId: z.uuid().optional(),
  eventType: z.string().max(200).optional(),
  q: z.string().min(1).max(200).optional(),
});
const sendTestBody = z.object({
  eventType: z.string().min(1).max(200).default('test.event'),
  data: z.record(z.string(), z.unknown()).default({ test: true }),
  externalId: z.string().min(1).max(500).optional(),
  userId: z.uuid().optional().describe('An internal user: creates the action directly, without signature verification'),
}).prefault({});

export function webhooksRoutes(deps: { webhooks: WebhooksService; ledger: LedgerService; deliveries: DeliveriesService; sendTest: SendTest; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['webhooks'], security: sessionSecurity };

    app.post('/orgs/:org/webhooks', { schema: { operationId: 'createWebhook', ...common, summary: 'Create an action webhook (the secret is shown only here)', params: orgParams, body: webhookInput, response: { 201: webhookCreated, ...errors } }, preHandler },
      async (request, reply) => reply.status(201).send(await deps.webhooks.create(request.org!, request.body)));
    app.get('/orgs/:org/webhooks', { schema: { operationId: 'listWebhooks', ...common, summary: 'List action webhooks', params: orgParams, response: { 200: z.object({ webhooks: z.array(webhookSchema) }), ...errors } }, preHandler },
      async (request) => ({ webhooks: await deps.webhooks.list(request.org!) }));
    app.get('/orgs/:org/webhooks/:id', { schema: { operationId: 'getWebhook', ...common, summary: 'One action webhook', params: webhookParams, response: { 200: webhookSchema, ...errors } }, preHandler },
      async (request) => deps.webhooks.get(request.org!, request.params.id));
    app.patch('/orgs/:org/webhooks/:id', { schema: { operationId: 'updateWebhook', ...common, summary: 'Change an action webhook', params: webhookParams, body: webhookPatch, response: { 200: webhookSchema, ...errors } }, preHandler },
      async (request) => deps.webhooks.update(request.org!, request.params.id, request.body));
    app.delete('/orgs/:org/webhooks/:id', { schema: { operationId: 'deleteWebhook', ...common, summary: 'Delete an action webhook', params: webhookParams, response: { 204: z.null(), ...errors } }, preHandler },
      async (request, reply) => {
        await deps.webhooks.delete(request.org!, request.params.id);
        return reply.status(204).send(null);
      });
    app.post('/orgs/:org/webhooks/:id/rotate-secret', { schema: { operationId: 'rotateWebhookSecret', ...common, summary: 'New secret; the previous one verifies for 24 more hours', params: webhookParams, response: { 200: secretRotated, ...errors } }, preHandler },
      async (request) => deps.webhooks.rotateSecret(request.org!, request.params.id));
    app.post('/orgs/:org/webhooks/:id/test', {
      schema: { operationId: 'sendTestEvent', ...common, summary: 'Send Test', params: webhookParams, body: sendTestBody, response: { 200: z.object({ mode: z.enum(['direct', 'http']), statusCode: z.int(), response: z.unknown() }), ...errors, 502: errorSchema } },
      preHandler,
    }, async (request) => deps.sendTest(request.org!, request.params.id, request.body));

    const ledger = { tags: ['ledger'], security: sessionSecurity };
    app.get('/orgs/:org/ledger', { schema: { operationId: 'listLedger', ...ledger, summary: 'Actions and deliveries, newest first', params: orgParams, querystring: ledgerQuery, response: { 200: z.object({ rows: z.array(ledgerRow), nextCursor: z.string().nullable() }), ...errors } }, preHandler },
      async (request) => deps.ledger.list(request.org!.id, request.query));
    app.get('/orgs/:org/ledger/:id', { schema: { operationId: 'getLedgerRow', ...ledger, summary: 'One ledger row, by eventId or actionId', params: orgParams.extend({ id: z.uuid() }), response: { 200: ledgerDetail, ...errors } }, preHandler },
      async (request) => deps.ledger.get(request.org!.id, request.params.id));
    app.post('/orgs/:org/deliveries/:eventId/replay', {
      schema: { operationId: 'replayDelivery', ...ledger, summary: "Run a delivery through today's configuration again", params: orgParams.extend({ eventId: z.uuid() }), response: { 200: z.object({ status: z.string(), eventId: z.uuid(), actionId: z.uuid().optional(), alreadyExists: z.boolean().optional(), reason: z.string().optional() }), ...errors } },
      preHandler,
    }, async (request) => deps.deliveries.replay(request.org!.id, request.params.eventId));
  };
}
