import type { FastifySchemaCompiler } from 'fastify';
import { validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema } from '../../lib/http-schemas.ts';
import { INGEST_ROUTE_URLS, type IngestFastPath } from './ingest.fast-path.ts';
import { actionWebhookPayload } from './payload.ts';

const created = z.object({ success: z.literal(true), actionId: z.uuid(), alreadyExists: z.literal(true).optional() });
const accepted = z.union([
  z.object({ success: z.literal(true), buffered: z.literal(true), eventId: z.uuid(), reason: z.string() }),
  z.object({ success: z.literal(true), skipped: z.literal(true), eventId: z.uuid(), reason: z.string() }),
]);
const response = {
  200: created,
  202: accepted,
  400: errorSchema,
  401: errorSchema,
  403: errorSchema,
  404: errorSchema,
  413: errorSchema,
  429: errorSchema,
  500: errorSchema,
  503: errorSchema,
};

const paramsOnly: FastifySchemaCompiler<z.ZodType> = (route) =>
  route.httpPart === 'body' ? () => ({ value: undefined }) : validatorCompiler(route);

/**
 * The ingest endpoints as the OpenAPI document shows them. The HTTP server hands every post to them
 * to the fast path (ingest.fast-path.ts) before Fastify routes it; a post that reaches these routes
 * anyway (`app.inject`) is answered by the fast path too, so ingest has one handler.
 */
export function ingestRoutes(deps: { fastPath: Pick<IngestFastPath, 'answerRouted'> }): FastifyPluginAsyncZod {
  return async (app) => {
    // The body is read by the service, as raw bytes, under the webhook's own size limit: the
    // signature covers the exact bytes, and the limit is known only once the webhook is found.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));

    const description = [
      'Signed JSON events become actions. Verification headers by scheme: `wh`: wh-id, wh-timestamp, wh-signature (or ' +
        'webhook-*);',
      '`hmac_sha256`: x-webhook-timestamp, x-webhook-signature `v1=<hex>`; `shared_token`: Authorization Bearer or ' +
        'x-webhook-token; `none`: the URL.',
    ].join(' ');

    app.post(
      INGEST_ROUTE_URLS.actions,
      {
        schema: {
          operationId: 'postActionWebhookEvent',
          security: [],
          tags: ['webhooks'],
          summary: 'Post an event to an action webhook',
          description,
          params: z.object({ org: z.string().max(100), webhookIdentifier: z.string().max(200) }),
          body: actionWebhookPayload,
          response,
        },
        // The body schema documents the payload; the service validates the raw bytes itself, after
        // verification, so Fastify checks the path parameters only.
        validatorCompiler: paramsOnly as never,
      },
      (request, reply) => {
        reply.hijack();
        void deps.fastPath.answerRouted(
          request.raw,
          reply.raw,
          request.params.org,
          request.params.webhookIdentifier,
          request.ip,
          request.log,
        );
      },
    );

    // The older path, kept for existing integrations; hidden from the documentation.
    app.post(
      INGEST_ROUTE_URLS.ingest,
      {
        schema: {
          operationId: 'postLegacyIngestEvent',
          security: [],
          hide: true,
          params: z.object({ org: z.string().max(100), identifier: z.string().max(200) }),
          response,
        },
      },
      (request, reply) => {
        reply.hijack();
        void deps.fastPath.answerRouted(
          request.raw,
          reply.raw,
          request.params.org,
          request.params.identifier,
          request.ip,
          request.log,
        );
      },
    );
  };
}
