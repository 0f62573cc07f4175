import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf, userOf } from '../../lib/request-context.ts';
import { agentParams } from '../agents/agents.schemas.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  experimentInput,
  experimentListQuery,
  experimentParams,
  experimentResultSchema,
  experimentResultsQuery,
  experimentSchema,
  experimentSummarySchema,
} from './experiments.schemas.ts';
import type { ExperimentsService } from './experiments.service.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };

export function experimentsRoutes(deps: { experiments: ExperimentsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['experiments'], security: sessionSecurity };

    app.post(
      '/orgs/:org/agents/:agentId/experiments',
      {
        schema: {
          operationId: 'startExperiment',
          ...common,
          summary: "Replay a version of the agent on its past actions: no tool runs, nothing is sent; the model's calls are real",
          params: agentParams,
          body: experimentInput,
          response: { 202: z.object({ experiment: experimentSchema }), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        const { agentId } = request.params;
        const experiment = await deps.experiments.create(orgOf(request).id, agentId, request.body, userOf(request).id);
        return reply.status(202).send({ experiment });
      },
    );
    app.get(
      '/orgs/:org/experiments',
      {
        schema: {
          operationId: 'listExperiments',
          ...common,
          summary: "The org's experiments (or one agent's), newest first",
          params: orgParams,
          querystring: experimentListQuery,
          response: { 200: z.object({ experiments: z.array(experimentSchema), nextCursor: z.string().nullable() }), ...errors },
        },
        preHandler,
      },
      async (request) => deps.experiments.list(orgOf(request).id, request.query),
    );
    app.get(
      '/orgs/:org/experiments/:experimentId',
      {
        schema: {
          operationId: 'getExperiment',
          ...common,
          summary: 'An experiment: its state, progress and summary, and its results stored so far (paginated)',
          params: experimentParams,
          querystring: experimentResultsQuery,
          response: {
            200: z.object({
              experiment: experimentSchema,
              summary: experimentSummarySchema,
              results: z.array(experimentResultSchema),
              nextCursor: z.string().nullable(),
            }),
            ...errors,
          },
        },
        preHandler,
      },
      async (request) => deps.experiments.get(orgOf(request).id, request.params.experimentId, request.query),
    );
    app.post(
      '/orgs/:org/experiments/:experimentId/cancel',
      {
        schema: {
          operationId: 'cancelExperiment',
          ...common,
          summary: 'Stop an experiment: no more replays start, running ones stop',
          params: experimentParams,
          response: { 200: z.object({ experiment: experimentSchema }), 409: errorSchema, ...errors },
        },
        preHandler,
      },
      async (request) => ({ experiment: await deps.experiments.cancel(orgOf(request).id, request.params.experimentId) }),
    );
  };
}
