import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { BudgetsService } from './budgets.service.ts';
import { budgetsSchema, orgBudgetBody, usageQuery, usageSchema } from './usage.schemas.ts';
import type { UsageService } from './usage.service.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };

export function usageRoutes(deps: { usage: UsageService; budgets: BudgetsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['usage'], security: sessionSecurity };

    app.get(
      '/orgs/:org/usage',
      {
        schema: {
          ...common,
          operationId: 'getUsage',
          summary: "Tokens, calls and cost of the org's model calls over a range, per agent, model, user or UTC day",
          params: orgParams,
          querystring: usageQuery,
          response: { 200: usageSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.usage.summary(orgOf(request).id, request.query),
    );

    app.get(
      '/orgs/:org/budgets',
      {
        schema: {
          ...common,
          operationId: 'getBudgets',
          summary: "The org's budget and its agents', each with what its current period has spent",
          params: orgParams,
          response: { 200: budgetsSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.budgets.status(orgOf(request).id),
    );

    app.put(
      '/orgs/:org/budget',
      {
        schema: {
          ...common,
          operationId: 'setOrgBudget',
          summary: "Sets the org's budget (null removes it); it applies from the next model call",
          params: orgParams,
          body: orgBudgetBody,
          response: { 200: z.object({ budget: budgetsSchema.shape.org }), ...errors },
        },
        preHandler,
      },
      async (request) => ({ budget: await deps.budgets.setOrgBudget(orgOf(request).id, request.body.budget) }),
    );
  };
}
