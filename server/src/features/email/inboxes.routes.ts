import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf, userOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  assignmentInput,
  assignmentParams,
  assignmentPatch,
  assignmentSchema,
  inboxInput,
  inboxParams,
  inboxPatch,
  inboxSchema,
} from './inboxes.schemas.ts';
import type { InboxesService } from './inboxes.service.ts';

const errors = {
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
  409: errorSchema,
  422: errorSchema,
  502: errorSchema,
};

export function inboxesRoutes(deps: { inboxes: InboxesService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['email'], security: sessionSecurity };
    const base = '/orgs/:org/email/inboxes';

    app.post(
      base,
      {
        schema: {
          operationId: 'createInbox',
          ...common,
          summary: 'Create an inbox: an address on a verified domain (the integration must exist)',
          params: orgParams,
          body: inboxInput,
          response: { 201: inboxSchema, ...errors },
        },
        preHandler,
      },
      async (request, reply) => reply.status(201).send(await deps.inboxes.create(orgOf(request).id, request.body)),
    );
    app.get(
      base,
      {
        schema: {
          operationId: 'listInboxes',
          ...common,
          summary: "The org's inboxes with their agents",
          params: orgParams,
          response: { 200: z.object({ inboxes: z.array(inboxSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ inboxes: await deps.inboxes.list(orgOf(request).id) }),
    );
    app.get(
      `${base}/:inboxId`,
      {
        schema: {
          operationId: 'getInbox',
          ...common,
          summary: 'One inbox with its agents',
          params: inboxParams,
          response: { 200: inboxSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.inboxes.get(orgOf(request).id, request.params.inboxId),
    );
    app.patch(
      `${base}/:inboxId`,
      {
        schema: {
          operationId: 'updateInbox',
          ...common,
          summary: "Change an inbox's display name (its address is for good: create another inbox instead)",
          params: inboxParams,
          body: inboxPatch,
          response: { 200: inboxSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.inboxes.rename(orgOf(request).id, request.params.inboxId, request.body.displayName),
    );
    app.delete(
      `${base}/:inboxId`,
      {
        schema: {
          operationId: 'deleteInbox',
          ...common,
          summary: 'Delete an inbox and its assignments',
          params: inboxParams,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.inboxes.remove(orgOf(request).id, request.params.inboxId);
        return reply.status(204).send(null);
      },
    );

    app.post(
      `${base}/:inboxId/agents`,
      {
        schema: {
          operationId: 'assignInboxAgent',
          ...common,
          summary: "Assign one of the org's agents to the inbox (auto-responses run as the user who assigns it)",
          params: inboxParams,
          body: assignmentInput,
          response: { 201: assignmentSchema, ...errors },
        },
        preHandler,
      },
      async (request, reply) =>
        reply
          .status(201)
          .send(await deps.inboxes.assign(orgOf(request).id, request.params.inboxId, userOf(request).id, request.body)),
    );
    app.get(
      `${base}/:inboxId/agents`,
      {
        schema: {
          operationId: 'listInboxAgents',
          ...common,
          summary: "The inbox's agents, primary first",
          params: inboxParams,
          response: { 200: z.object({ agents: z.array(assignmentSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ agents: await deps.inboxes.agents(orgOf(request).id, request.params.inboxId) }),
    );
    app.patch(
      `${base}/:inboxId/agents/:agentId`,
      {
        schema: {
          operationId: 'updateInboxAgent',
          ...common,
          summary:
            "Change an agent's assignment: whether it is primary and answers every email, its approval modes, who decides " +
            'its calls and how they are told (auto-responses still run as the user who assigned it)',
          params: assignmentParams,
          body: assignmentPatch,
          response: { 200: assignmentSchema, ...errors },
        },
        preHandler,
      },
      async (request) =>
        deps.inboxes.updateAssignment(orgOf(request).id, request.params.inboxId, request.params.agentId, request.body),
    );
    app.delete(
      `${base}/:inboxId/agents/:agentId`,
      {
        schema: {
          operationId: 'unassignInboxAgent',
          ...common,
          summary: 'Take an agent off the inbox',
          params: assignmentParams,
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.inboxes.unassign(orgOf(request).id, request.params.inboxId, request.params.agentId);
        return reply.status(204).send(null);
      },
    );
  };
}
