import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApprovalLinks } from './approval-links.service.ts';
import { MAX_DECISION_REASON_CHARS } from '../approvals.service.ts';
import { renderDecisionPage } from './decision-page.ts';

const params = z.object({ token: z.string().max(200).describe('The token of an approval email link') });
const html = z.string().describe('An HTML page');
const pageResponses = { 200: html, 403: html, 404: html, 409: html, 410: html };

/**
 * The pages of approval emails' one-time links: GET shows what the link decides and a button (it never
 * decides), POST decides. No session: the token is the credential, bound to one approver, call and decision.
 */
export function approvalLinksRoutes(deps: { links: ApprovalLinks }): FastifyPluginAsyncZod {
  return async (app) => {
    // The confirmation page posts an HTML form (only in this plugin's scope: the API itself speaks JSON).
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 16 * 1024 },
      (_request, body, done) => {
        done(null, Object.fromEntries(new URLSearchParams(body as string)));
      },
    );
    const common = { tags: ['approvals'], security: [], params, produces: ['text/html'] };

    app.get(
      '/approvals/decide/:token',
      {
        schema: {
          ...common,
          operationId: 'viewApprovalLink',
          summary: "An approval email's link: what it decides, and a button to confirm (opening it decides nothing)",
          response: pageResponses,
        },
      },
      async (request, reply) => {
        const page = renderDecisionPage(await deps.links.view(request.params.token), request.url);
        return reply.status(page.status).headers(page.headers).send(page.html);
      },
    );

    app.post(
      '/approvals/decide/:token',
      {
        schema: {
          ...common,
          operationId: 'useApprovalLink',
          summary: "Decides as the link's approver, once: approves or rejects its tool call, with an optional reason (why)",
          consumes: ['application/x-www-form-urlencoded', 'application/json'],
          body: z
            .object({
              reason: z
                .string()
                .max(MAX_DECISION_REASON_CHARS, `a reason has at most ${MAX_DECISION_REASON_CHARS} characters`)
                .optional()
                .describe('Why the call is rejected (a reject link only)'),
            })
            .prefault({}),
          response: pageResponses,
        },
      },
      async (request, reply) => {
        const reason = (request.body as { reason?: string }).reason?.trim() || null;
        const page = renderDecisionPage(await deps.links.use(request.params.token, reason), request.url);
        return reply.status(page.status).headers(page.headers).send(page.html);
      },
    );
  };
}
