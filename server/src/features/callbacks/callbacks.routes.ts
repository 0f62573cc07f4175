import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  callbackDeliverySchema,
  callbackEndpointCreated,
  callbackEndpointInput,
  callbackEndpointPatch,
  callbackEndpointSchema,
  callbackParams,
  callbackSecretRotated,
  callbackListQuery,
  deliveryParams,
  recoverBody,
  webhookCallbacksParams,
} from './callbacks.schemas.ts';
import type { CallbacksService } from './callbacks.service.ts';
import { errorSchema, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 409: errorSchema };

export function callbacksRoutes(deps: { callbacks: CallbacksService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['callbacks'], security: sessionSecurity };
    const base = '/orgs/:org/webhooks/:webhookId/callbacks';

    app.post(
      base,
      {
        schema: {
          operationId: 'createCallbackEndpoint',
          ...common,
          summary: 'Add a callback endpoint (its signing secret is shown only here)',
          params: webhookCallbacksParams,
          body: callbackEndpointInput,
          response: { 201: callbackEndpointCreated, ...errors },
        },
        preHandler,
      },
      async (request, reply) =>
        reply.status(201).send(await deps.callbacks.create(orgOf(request).id, request.params.webhookId, request.body)),
    );
    app.get(
      base,
      {
        schema: {
          operationId: 'listCallbackEndpoints',
          ...common,
          summary: "A webhook's callback endpoints",
          params: webhookCallbacksParams,
          response: { 200: z.object({ callbacks: z.array(callbackEndpointSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ callbacks: await deps.callbacks.list(orgOf(request).id, request.params.webhookId) }),
    );
    app.get(
      `${base}/:callbackId`,
      {
        schema: {
          operationId: 'getCallbackEndpoint',
          ...common,
          summary: 'One callback endpoint',
          params: callbackParams,
          response: { 200: callbackEndpointSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.callbacks.get(orgOf(request).id, request.params.webhookId, request.params.callbackId),
    );
    app.patch(
      `${base}/:callbackId`,
      {
        schema: {
          operationId: 'updateCallbackEndpoint',
          ...common,
          summary: 'Change a callback endpoint; disabling fails what it still had to deliver',
          params: callbackParams,
          body: callbackEndpointPatch,
          response: { 200: callbackEndpointSchema, ...errors },
        },
        preHandler,
      },
      async (request) =>
        deps.callbacks.update(orgOf(request).id, request.params.webhookId, request.params.callbackId, request.body),
    );
    app.delete(
      `${base}/:callbackId`,
      {
        schema: {
          operationId: 'deleteCallbackEndpoint',
          ...common,
          summary: 'Delete a callback endpoint and its deliveries',
          params: callbackParams,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.callbacks.delete(orgOf(request).id, request.params.webhookId, request.params.callbackId);
        return reply.status(204).send(null);
      },
    );
    app.post(
      `${base}/:callbackId/rotate-secret`,
      {
        schema: {
          operationId: 'rotateCallbackEndpointSecret',
          ...common,
          summary: 'New signing secret; the previous one keeps signing beside it for 24 hours',
          params: callbackParams,
          response: { 200: callbackSecretRotated, ...errors },
        },
        preHandler,
      },
      async (request) => deps.callbacks.rotateSecret(orgOf(request).id, request.params.webhookId, request.params.callbackId),
    );
    app.get(
      `${base}/:callbackId/deliveries`,
      {
        schema: {
          operationId: 'listCallbackDeliveries',
          ...common,
          summary: "An endpoint's deliveries, newest first, with their attempts",
          params: callbackParams,
          querystring: callbackListQuery,
          response: {
            200: z.object({ deliveries: z.array(callbackDeliverySchema), nextCursor: z.string().nullable() }),
            ...errors,
          },
        },
        preHandler,
      },
      async (request) =>
        deps.callbacks.deliveries(orgOf(request).id, request.params.webhookId, request.params.callbackId, request.query),
    );
    app.post(
      `${base}/:callbackId/recover`,
      {
        schema: {
          operationId: 'recoverCallbackDeliveries',
          ...common,
          summary: 'Send again every failed or dead-lettered delivery since a time',
          params: callbackParams,
          body: recoverBody,
          response: { 202: z.object({ recovered: z.int() }), ...errors },
        },
        preHandler,
      },
      async (request, reply) =>
        reply
          .status(202)
          .send(
            await deps.callbacks.recover(
              orgOf(request).id,
              request.params.webhookId,
              request.params.callbackId,
              request.body.since,
            ),
          ),
    );
    app.post(
      '/orgs/:org/callback-deliveries/:deliveryId/replay',
      {
        schema: {
          operationId: 'replayCallbackDelivery',
          ...common,
          summary: 'Send one delivery again, with the same webhook-id',
          params: deliveryParams,
          response: { 202: callbackDeliverySchema, ...errors },
        },
        preHandler,
      },
      async (request, reply) => reply.status(202).send(await deps.callbacks.replay(orgOf(request).id, request.params.deliveryId)),
    );
  };
}
