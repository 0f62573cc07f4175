import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, notFound } from '../../../lib/errors.ts';
import { errorSchema } from '../../../lib/http-schemas.ts';
import type { SlackInteractions } from './slack-interactions.ts';

/** A Slack interaction: its payload field is JSON of a few kilobytes; a modal's state brings the most. */
const MAX_BODY_BYTES = 256 * 1024;

/**
 * The Interactivity Request URL of an org's Slack app. Slack posts form-encoded `payload=<json>`,
 * signed with the app's signing secret, and waits 3 seconds for the answer: a click is answered at
 * once and acted on after; a modal's submission is decided before the answer (its errors keep it open).
 */
export function slackInteractionsRoutes(deps: {
  interactions: SlackInteractions;
  orgIdOf: (slugOrId: string) => Promise<string | undefined>;
}): FastifyPluginAsyncZod {
  return async (app) => {
    // The signature covers the raw body: read as it came (only in this plugin's scope).
    app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));
    app.post(
      '/webhooks/slack/:org',
      {
        bodyLimit: MAX_BODY_BYTES,
        schema: {
          tags: ['slack'],
          operationId: 'slackInteraction',
          summary: "A Slack interaction (button or modal) from the org's own app, verified with its signing secret",
          security: [],
          consumes: ['application/x-www-form-urlencoded'],
          params: z.object({ org: z.string().min(1).max(100) }),
          response: {
            200: z.unknown().describe('Empty, or a modal `response_action` (errors to show in its fields)'),
            400: errorSchema,
            401: errorSchema,
            404: errorSchema,
            413: errorSchema,
            415: errorSchema,
          },
        },
      },
      async (request, reply) => {
        if (!/^application\/x-www-form-urlencoded\b/i.test(request.headers['content-type'] ?? ''))
          throw new AppError('unsupported_media_type', 'An interaction is application/x-www-form-urlencoded');
        const orgId = await deps.orgIdOf(request.params.org);
        if (!orgId) throw notFound('Organization');
        const outcome = await deps.interactions.receive(orgId, request.headers, String(request.body ?? ''));
        // Answered first: Slack shows an error after 3 seconds, whatever the work after it does.
        await (outcome.answer ? reply.status(200).send(outcome.answer) : reply.status(200).send());
        await outcome.after?.();
        return reply;
      },
    );
  };
}
