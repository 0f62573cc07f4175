import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema, orgParams, sessionSecurity } from '../../../lib/http-schemas.ts';
import { orgOf } from '../../../lib/request-context.ts';
import type { OrgAccess } from '../../orgs/org-access.ts';
import { slackIntegrationInput, slackIntegrationSchema, slackTestSchema } from './slack-integration.schemas.ts';
import type { SlackIntegrationService } from './slack-integration.service.ts';

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 422: errorSchema };

/** An org's Slack app, for approvals in Slack: connect (checked with auth.test), look (hints only), test, remove. */
export function slackIntegrationRoutes(deps: {
  slackIntegration: SlackIntegrationService;
  orgAccess: OrgAccess;
}): FastifyPluginAsyncZod {
  return async (app) => {
    const preHandler = deps.orgAccess('Admin');
    const common = { tags: ['slack'], security: sessionSecurity, params: orgParams };

    app.get(
      '/orgs/:org/slack',
      {
        schema: {
          ...common,
          operationId: 'getSlackIntegration',
          summary: "The org's Slack app: its channel, workspace and hints of its secrets (never the secrets)",
          response: { 200: slackIntegrationSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.slackIntegration.get(orgOf(request)),
    );
    app.put(
      '/orgs/:org/slack',
      {
        schema: {
          ...common,
          operationId: 'putSlackIntegration',
          summary:
            "Connects the org's own Slack app: auth.test checks the bot token first (422 with Slack's error); a token or " +
            'secret left out keeps the saved one',
          body: slackIntegrationInput,
          response: { 200: slackIntegrationSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.slackIntegration.save(orgOf(request), request.body),
    );
    app.post(
      '/orgs/:org/slack/test',
      {
        schema: {
          ...common,
          operationId: 'testSlackIntegration',
          summary: 'Posts a test message in the channel (checks the token, the channel, and that the app is in it)',
          response: { 200: slackTestSchema, ...errors },
        },
        preHandler,
      },
      async (request) => deps.slackIntegration.test(orgOf(request).id),
    );
    app.delete(
      '/orgs/:org/slack',
      {
        schema: {
          ...common,
          operationId: 'deleteSlackIntegration',
          summary: "Disconnects the org's Slack app (its secrets are deleted)",
          response: { 204: z.null(), ...errors },
        },
        preHandler,
      },
      async (request, reply) => {
        await deps.slackIntegration.remove(orgOf(request).id);
        return reply.status(204).send(null);
      },
    );
  };
}
