import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf, userOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  diffQuery,
  publicationSchema,
  versionDiffSchema,
  versionInput,
  versionParams,
  versionSchema,
  versionsQuery,
} from './agent-versions.schemas.ts';
import type { AgentVersionsService } from './agent-versions.service.ts';
import { agentParams, agentSchema } from './agents.schemas.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };
const page = { nextCursor: z.string().nullable() };

export function agentVersionsRoutes(deps: { versions: AgentVersionsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['agent versions'], security: sessionSecurity };

    app.post(
      '/orgs/:org/agents/:agentId/versions',
      {
        schema: {
          operationId: 'createAgentVersion',
          ...common,
          summary: "Save a draft: the agent's next version, not live (fields left out are the live version's)",
          params: agentParams,
          body: versionInput,
          response: { 201: z.object({ version: versionSchema }), ...errors, 409: errorSchema },
        },
        preHandler,
      },
      async (request, reply) => {
        const { agentId } = request.params;
        const version = await deps.versions.createDraft(orgOf(request).id, agentId, request.body, userOf(request).id);
        return reply.status(201).send({ version });
      },
    );
    app.get(
      '/orgs/:org/agents/:agentId/versions',
      {
        schema: {
          operationId: 'listAgentVersions',
          ...common,
          summary: "The agent's versions, newest first",
          params: agentParams,
          querystring: versionsQuery,
          response: { 200: z.object({ versions: z.array(versionSchema), ...page }), ...errors },
        },
        preHandler,
      },
      async (request) => deps.versions.list(orgOf(request).id, request.params.agentId, request.query),
    );
    app.get(
      '/orgs/:org/agents/:agentId/versions/:version',
      {
        schema: {
          operationId: 'getAgentVersion',
          ...common,
          summary: 'One version of the agent',
          params: versionParams,
          response: { 200: versionSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.versions.get(orgOf(request).id, request.params.agentId, request.params.version),
    );
    app.get(
      '/orgs/:org/agents/:agentId/versions/:version/diff',
      {
        schema: {
          operationId: 'diffAgentVersions',
          ...common,
          summary: 'What changed from version `against` to this one: the fields, and the instructions line by line',
          params: versionParams,
          querystring: diffQuery,
          response: { 200: versionDiffSchema, ...errors },
        },
        preHandler,
      },
      async (request) => {
        const { agentId, version } = request.params;
        return deps.versions.diff(orgOf(request).id, agentId, version, request.query.against);
      },
    );
    app.post(
      '/orgs/:org/agents/:agentId/versions/:version/publish',
      {
        schema: {
          operationId: 'publishAgentVersion',
          ...common,
          summary: 'Make a version live (roll back: publish an older one); actions already created keep theirs',
          params: versionParams,
          response: { 200: agentSchema, ...errors },
        },
        preHandler,
      },
      async (request) => {
        const { agentId, version } = request.params;
        return deps.versions.publish(orgOf(request).id, agentId, version, userOf(request).id);
      },
    );
    app.get(
      '/orgs/:org/agents/:agentId/publications',
      {
        schema: {
          operationId: 'listAgentPublications',
          ...common,
          summary: 'Which version was made live, when and by whom, newest first',
          params: agentParams,
          querystring: versionsQuery,
          response: { 200: z.object({ publications: z.array(publicationSchema), ...page }), ...errors },
        },
        preHandler,
      },
      async (request) => deps.versions.publications(orgOf(request).id, request.params.agentId, request.query),
    );
  };
}
