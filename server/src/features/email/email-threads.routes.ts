import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EMAIL_ATTACHMENT_STATUSES, EMAIL_DIRECTIONS, EMAIL_MESSAGE_STATUSES } from '../../db/email-schema.ts';
import { attachmentDisposition } from '../../lib/download-filename.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import { orgOf } from '../../lib/request-context.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { EmailThreadsService } from './email-threads.service.ts';

const threadSummary = z.object({
  id: z.uuid(),
  subject: z.string(),
  inboxId: z.uuid().nullable(),
  startedBy: z.string().nullable().describe('The From of its first message: the customer who wrote, or our sender'),
  messageCount: z.int(),
  createdAt: z.date(),
  updatedAt: z.date(),
});
const attachmentSchema = z.object({
  id: z.uuid(),
  filename: z.string(),
  contentType: z.string(),
  sizeBytes: z.number(),
  status: z.enum(EMAIL_ATTACHMENT_STATUSES),
  error: z.string().nullable(),
  documentId: z.uuid().nullable(),
  contentId: z.string().nullable(),
  contentDisposition: z.string().nullable(),
});
const messageSchema = z.object({
  id: z.uuid(),
  direction: z.enum(EMAIL_DIRECTIONS),
  inboxId: z.uuid().nullable(),
  from: z.string(),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  subject: z.string(),
  messageId: z.string().nullable(),
  inReplyTo: z.string().nullable(),
  references: z.array(z.string()),
  providerEmailId: z.string().nullable(),
  providerMessageId: z.string().nullable(),
  sentAt: z.date().nullable(),
  createdAt: z.date(),
  text: z.string(),
  html: z.string().nullable().meta({ description: 'Sanitized before it was stored' }),
  headers: z.record(z.string(), z.string()),
  status: z.enum(EMAIL_MESSAGE_STATUSES),
  statusDetail: z.string().nullable(),
  actionId: z.uuid().nullable().meta({ description: 'Inbound: the action that answers it; outbound: the action that sent it' }),
  attachments: z.array(attachmentSchema),
  deliveryEvents: z.array(z.object({ type: z.string(), data: z.unknown(), occurredAt: z.date() })),
});
const suppressionSchema = z.object({
  address: z.string(),
  reason: z.enum(['bounced', 'complained', 'provider_suppressed']),
  detail: z.string().nullable(),
  messageId: z.uuid().nullable(),
  createdAt: z.date(),
});
const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };

/** Email threads, their messages and attachments, and the suppression list, for the org's members. */
export function emailThreadsRoutes(deps: { threads: EmailThreadsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    const members = deps.orgAccess('Guest');
    const common = { tags: ['email'], security: sessionSecurity };

    app.get(
      '/orgs/:org/email/threads',
      {
        schema: {
          operationId: 'listEmailThreads',
          ...common,
          summary: "The org's email threads, most recent activity first",
          params: orgParams,
          querystring: paginationQuery.extend({ inboxId: z.uuid().optional() }),
          response: { 200: z.object({ threads: z.array(threadSummary), nextCursor: z.string().nullable() }), ...errors },
        },
        preHandler: members,
      },
      async (request) => deps.threads.list(orgOf(request).id, request.query),
    );

    app.get(
      '/orgs/:org/email/threads/:threadId',
      {
        schema: {
          operationId: 'getEmailThread',
          ...common,
          summary: 'An email thread with its messages, oldest first',
          params: orgParams.extend({ threadId: z.uuid() }),
          response: {
            200: threadSummary
              .omit({ inboxId: true, startedBy: true, messageCount: true })
              .extend({ messages: z.array(messageSchema) }),
            ...errors,
          },
        },
        preHandler: members,
      },
      async (request) => deps.threads.get(orgOf(request).id, request.params.threadId),
    );

    app.get(
      '/orgs/:org/email/attachments/:attachmentId',
      {
        schema: {
          operationId: 'downloadEmailAttachment',
          ...common,
          summary: 'Download an attachment of an email (its stored content type, always as an attachment)',
          params: orgParams.extend({ attachmentId: z.uuid() }),
          response: { ...errors },
        },
        preHandler: members,
      },
      async (request, reply) => {
        const { filename, contentType, content } = await deps.threads.attachment(orgOf(request).id, request.params.attachmentId);
        // The sender chose the content type: it is never rendered on our origin (attachment, sandbox, nosniff).
        return reply
          .type(/^[\w.+-]+\/[\w.+-]+$/.test(contentType) ? contentType : 'application/octet-stream')
          .header('content-disposition', attachmentDisposition(filename))
          .header('content-security-policy', "sandbox; default-src 'none'")
          .header('x-content-type-options', 'nosniff')
          .send(content as never);
      },
    );

    app.get(
      '/orgs/:org/email/messages/:messageId/html',
      {
        schema: {
          operationId: 'getEmailMessageHtml',
          ...common,
          summary:
            "A message's sanitized HTML as a page, for a sandboxed frame of the console (no script, nothing loaded " +
            'from elsewhere)',
          params: orgParams.extend({ messageId: z.uuid() }),
          response: { ...errors },
        },
        preHandler: members,
      },
      async (request, reply) => {
        const html = await deps.threads.messageHtml(orgOf(request).id, request.params.messageId);
        // Sanitized already; the page policy is a second wall: no script, no remote images, fonts or
        // styles (tracking pixels stay dark), no forms, framed only by our own pages, in a sandbox.
        return reply
          .type('text/html; charset=utf-8')
          .header(
            'content-security-policy',
            "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'",
          )
          .header('x-frame-options', 'SAMEORIGIN')
          .header('x-content-type-options', 'nosniff')
          .send(
            `<!doctype html><html><head><meta charset="utf-8"><base target="_blank"></head><body>${html}</body></html>` as never,
          );
      },
    );

    app.get(
      '/orgs/:org/email/suppressions',
      {
        schema: {
          operationId: 'listEmailSuppressions',
          ...common,
          summary: 'Addresses that sendEmail refuses (they bounced permanently or complained), newest first',
          params: orgParams,
          querystring: paginationQuery,
          response: { 200: z.object({ suppressions: z.array(suppressionSchema), nextCursor: z.string().nullable() }), ...errors },
        },
        preHandler: members,
      },
      async (request) => deps.threads.suppressions(orgOf(request).id, request.query),
    );

    app.delete(
      '/orgs/:org/email/suppressions/:address',
      {
        schema: {
          operationId: 'deleteEmailSuppression',
          ...common,
          summary: 'Takes an address off the suppression list (sendEmail may write to it again)',
          params: orgParams.extend({ address: z.string().min(3).max(320) }),
          response: { 204: z.null(), ...errors },
        },
        preHandler: deps.orgAccess('Admin'),
      },
      async (request, reply) => {
        await deps.threads.removeSuppression(orgOf(request).id, request.params.address);
        return reply.status(204).send(null);
      },
    );
  };
}
