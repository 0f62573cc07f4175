import type { FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { IngestService } from './ingest.service.ts';
import { actionWebhookPayload } from './payload.ts';
import { errorSchema } from '../../lib/http-schemas.ts';

const created = z.object({ success: z.literal(true), actionId: z.uuid(), alreadyExists: z.literal(true).optional() });
const accepted = z.union([
  z.object({ success: z.literal(true), buffered: z.literal(true), eventId: z.uuid(), reason: z.string() }),
  z.object({ success: z.literal(true), skipped: z.literal(true), eventId: z.uuid(), reason: z.string() }),
]);
const response = { 200: created, 202: accepted, 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema, 413: errorSchema, 429: errorSchema, 500: errorSchema };

/** The two ingest routes, as Fastify names them (and so the request metrics, whichever path serves them). */
export const INGEST_ROUTE_URLS = { actions: '/webhooks/actions/:org/:webhookIdentifier', ingest: '/webhooks/ingest/:org/:identifier' } as const;

const paramsOnly: FastifySchemaCompiler<z.ZodType> = (route) => (route.httpPart === 'body' ? () => ({ value: undefined }) : validatorCompiler(route));

/**
 * The ingest endpoints as the OpenAPI document shows them. Every post to them is answered by
 * ingest.fast-path.ts before Fastify routes it; these routes make the same service call, should a
 * post ever reach Fastify.
 */
export function ingestRoutes(deps: { ingest: IngestService }): FastifyPluginAsyncZod {
  return async (app) => {
    // The body is read by the service, as raw bytes, under the webhook's own size limit: the
    // signature covers the exact bytes, and the limit is known only once the webhook is found.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));

    const description = [
      'Signed JSON events become actions. Verification headers by scheme: `wh`: wh-id, wh-timestamp, wh-signature (or webhook-*);',
      '`hmac_sha256`: x-webhook-timestamp, x-webhook-signature `v1=<hex>`; `shared_token`: Authorization Bearer or x-webhook-token; `none`: the URL.',
    ].join(' ');
    const handler = async (org: string, identifier: string, request: FastifyRequest, reply: FastifyReply) => {
      const result = await deps.ingest.handle({ org, identifier, headers: request.headers, ip: request.ip, body: request.raw });
      return reply.status(result.statusCode).send(result.body);
    };

    app.post(INGEST_ROUTE_URLS.actions, {
      schema: {
        operationId: 'postActionWebhookEvent', security: [],
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
    }, (request, reply) => handler(request.params.org, request.params.webhookIdentifier, request, reply));

    // The older path, kept for existing integrations; hidden from the documentation.
    app.post(INGEST_ROUTE_URLS.ingest, {
      schema: { operationId: 'postLegacyIngestEvent', security: [], hide: true, params: z.object({ org: z.string().max(100), identifier: z.string().max(200) }), response },
    }, (request, reply) => handler(request.params.org, request.params.identifier, request, reply));
  };
}
