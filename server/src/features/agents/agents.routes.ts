import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { OrgAccess } from '../orgs/org-access.ts';
import {
  actionRuleInput,
  actionRulePatch,
  actionRuleSchema,
  agentInput,
  agentParams,
  agentPatch,
  agentSchema,
  listedToolSchema,
  ruleParams,
} from './agents.schemas.ts';
import type { AgentsService } from './agents.service.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf, userOf } from '../../lib/request-context.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };
const noContent = z.null().describe('No content');

export function agentsRoutes(deps: { agents: AgentsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['agents'], security: sessionSecurity };

    app.post(
      '/orgs/:org/agents',
      {
        schema: {
          operationId: 'createAgent',
          ...common,
          summary: 'Create an agent',
          params: orgParams,
          body: agentInput,
          response: { 201: agentSchema, ...errors },
        },
        preHandler,
      },
      async (request, reply) =>
        reply.status(201).send(await deps.agents.createAgent(orgOf(request).id, request.body, userOf(request).id)),
    );
    app.get(
      '/orgs/:org/agents',
      {
        schema: {
          operationId: 'listAgents',
          ...common,
          summary: 'List agents',
          params: orgParams,
          response: { 200: z.object({ agents: z.array(agentSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ agents: await deps.agents.listAgents(orgOf(request).id) }),
    );
    app.get(
      '/orgs/:org/tools',
      {
        schema: {
          operationId: 'listTools',
          ...common,
          summary:
            "The tools the org's agents can be given: the built-in ones and its MCP servers' (for any member: tool " +
            'preferences name them too)',
          params: orgParams,
          response: { 200: z.object({ tools: z.array(listedToolSchema) }), ...errors },
        },
        preHandler: deps.orgAccess('Guest'),
      },
      async (request) => ({ tools: await deps.agents.listTools(orgOf(request).id) }),
    );

    app.get(
      '/orgs/:org/agents/:agentId',
      {
        schema: {
          operationId: 'getAgent',
          ...common,
          summary: 'One agent',
          params: agentParams,
          response: { 200: agentSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.agents.getAgent(orgOf(request).id, request.params.agentId),
    );
    app.patch(
      '/orgs/:org/agents/:agentId',
      {
        schema: {
          operationId: 'updateAgent',
          ...common,
          summary:
            'Change an agent: a change of what it does (instructions, provider, model, tools) makes its next version, live',
          params: agentParams,
          body: agentPatch,
          response: { 200: agentSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.agents.updateAgent(orgOf(request).id, request.params.agentId, request.body, userOf(request).id),
    );
    app.delete(
      '/orgs/:org/agents/:agentId',
      {
        schema: {
          operationId: 'deleteAgent',
          ...common,
          summary: 'Delete an agent',
          params: agentParams,
          response: { 204: noContent, ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.agents.deleteAgent(orgOf(request).id, request.params.agentId);
        return reply.status(204).send(null);
      },
    );

    const rules = { tags: ['action rules'], security: sessionSecurity };
    app.post(
      '/orgs/:org/action-rules',
      {
        schema: {
          operationId: 'createActionRule',
          ...rules,
          summary: 'Create an action rule',
          params: orgParams,
          body: actionRuleInput,
          response: { 201: actionRuleSchema, ...errors },
        },
        preHandler,
      },
      async (request, reply) => reply.status(201).send(await deps.agents.createRule(orgOf(request).id, request.body)),
    );
    app.get(
      '/orgs/:org/action-rules',
      {
        schema: {
          operationId: 'listActionRules',
          ...rules,
          summary: 'List action rules',
          params: orgParams,
          response: { 200: z.object({ actionRules: z.array(actionRuleSchema) }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ actionRules: await deps.agents.listRules(orgOf(request).id) }),
    );
    app.get(
      '/orgs/:org/action-rules/:ruleId',
      {
        schema: {
          operationId: 'getActionRule',
          ...rules,
          summary: 'One action rule',
          params: ruleParams,
          response: { 200: actionRuleSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.agents.getRule(orgOf(request).id, request.params.ruleId),
    );
    app.patch(
      '/orgs/:org/action-rules/:ruleId',
      {
        schema: {
          operationId: 'updateActionRule',
          ...rules,
          summary: 'Change an action rule',
          params: ruleParams,
          body: actionRulePatch,
          response: { 200: actionRuleSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.agents.updateRule(orgOf(request).id, request.params.ruleId, request.body),
    );
    app.delete(
      '/orgs/:org/action-rules/:ruleId',
      {
        schema: {
          operationId: 'deleteActionRule',
          ...rules,
          summary: 'Delete an action rule',
          params: ruleParams,
          response: { 204: noContent, ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.agents.deleteRule(orgOf(request).id, request.params.ruleId);
        return reply.status(204).send(null);
      },
    );
  };
}
