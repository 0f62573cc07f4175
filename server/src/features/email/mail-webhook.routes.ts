import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { errorSchema } from '../../lib/http-schemas.ts';
import type { MailWebhookIntake } from './mail-webhook.service.ts';
import { SpanKind, type Tracing } from '../../lib/tracing.ts';

const acknowledged = z.object({
  received: z.literal(true),
  status: z.enum(['accepted', 'duplicate', 'ignored']),
  notificationId: z.uuid(),
  reason: z.string().optional(),
});

/** The mail provider's notifications (email.received, bounces, delivery events), signed with the org's webhook secret. */
export function mailWebhookRoutes(deps: {
  intake: MailWebhookIntake;
  maxBytes: number;
  tracing: Pick<Tracing, 'inSpan' | 'fromHeaders' | 'traceparent'>;
}): FastifyPluginAsyncZod {
  return async (app) => {
    // The signature covers the exact bytes: the body is kept raw, whatever its declared type.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: deps.maxBytes }, (_request, body, done) => done(null, body));

    app.post(
      '/webhooks/mail',
      {
        bodyLimit: deps.maxBytes,
        schema: {
          operationId: 'postMailNotification',
          security: [],
          tags: ['email'],
          summary: "The email provider's notifications (give this URL to the provider's webhook)",
          description: [
            'Verified with the webhook secret of the email integration of the org the notification is about: Standard Webhooks',
            'signatures under `svix-id`, `svix-timestamp`, `svix-signature` (or `webhook-*`), 5 minutes of tolerance. ' +
              'Answered once',
            'the notification is stored; it is processed right after. The same svix-id again is acknowledged and not ' +
              'processed twice;',
            'a notification about no inbox and no email of ours is acknowledged as ignored.',
          ].join(' '),
          response: {
            200: acknowledged,
            400: errorSchema,
            401: errorSchema,
            413: errorSchema,
            415: errorSchema,
            503: errorSchema,
          },
        },
      },
      async (request) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        // An email's action starts its trace here (or continues the provider's, given a traceparent).
        const attributes = { 'http.request.method': 'POST', 'http.route': '/webhooks/mail' };
        return deps.tracing.inSpan(
          'POST /webhooks/mail',
          deps.tracing.fromHeaders(request.headers),
          { kind: SpanKind.SERVER, attributes },
          async (span) => ({
            received: true as const,
            ...(await deps.intake.receive(body, request.headers, deps.tracing.traceparent(span))),
          }),
        );
      },
    );
  };
}
