import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { SendTest } from './send-test.ts';
import {
  secretRotated,
  sendTestBody,
  webhookCreated,
  webhookInput,
  webhookParams,
  webhookPatch,
  webhookSchema,
} from './webhooks.schemas.ts';
import type { WebhooksService } from './webhooks.service.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema };

export function webhooksRoutes(deps: {
  webhooks: WebhooksService;
  sendTest: SendTest;
  orgAccess: OrgAccess;
}): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['webhooks'], security: sessionSecurity };

    app.post(
      '/orgs/:org/webhooks',
      {
        schema: {
          operationId: 'createWebhook',
          ...common,
          summary: 'Create an action webhook (the secret is shown only here)',
          params: orgParams,
          body: webhookInput,
          response: { 201: webhookCreated, ...errors },
        },
        preHandler,
      },
      async (request, reply) => reply.status(201).send(await deps.webhooks.create(orgOf(request), request.body)),
    );
    app.get(
      '/orgs/:org/webhooks',
      {
        schema: {
          operationId: 'listWebhooks',
          ...common,
          summary: 'List action webhooks',
          params: orgParams,
          response: { 200: z.object({ webhooks: z.array(webhookSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ webhooks: await deps.webhooks.list(orgOf(request)) }),
    );
    app.get(
      '/orgs/:org/webhooks/:id',
      {
        schema: {
          operationId: 'getWebhook',
          ...common,
          summary: 'One action webhook',
          params: webhookParams,
          response: { 200: webhookSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.webhooks.get(orgOf(request), request.params.id),
    );
    app.patch(
      '/orgs/:org/webhooks/:id',
      {
        schema: {
          operationId: 'updateWebhook',
          ...common,
          summary: 'Change an action webhook',
          params: webhookParams,
          body: webhookPatch,
          response: { 200: webhookSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.webhooks.update(orgOf(request), request.params.id, request.body),
    );
    app.delete(
      '/orgs/:org/webhooks/:id',
      {
        schema: {
          operationId: 'deleteWebhook',
          ...common,
          summary: 'Delete an action webhook',
          params: webhookParams,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.webhooks.delete(orgOf(request), request.params.id);
        return reply.status(204).send(null);
      },
    );
    app.post(
      '/orgs/:org/webhooks/:id/rotate-secret',
      {
        schema: {
          operationId: 'rotateWebhookSecret',
          ...common,
          summary: 'New secret; the previous one verifies for 24 more hours',
          params: webhookParams,
          response: { 200: secretRotated, ...errors },
        },
        preHandler,
      },
      async (request) => deps.webhooks.rotateSecret(orgOf(request), request.params.id),
    );
    app.post(
      '/orgs/:org/webhooks/:id/test',
      {
        schema: {
          operationId: 'sendTestEvent',
          ...common,
          summary: 'Send Test',
          params: webhookParams,
          body: sendTestBody,
          response: {
            200: z.object({ mode: z.enum(['direct', 'http']), statusCode: z.int(), response: z.unknown() }),
            ...errors,
            502: errorSchema,
          },
        },
        preHandler,
      },
      async (request) => deps.sendTest(orgOf(request), request.params.id, request.body),
    );
  };
}
