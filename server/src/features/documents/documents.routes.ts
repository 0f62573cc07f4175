import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { attachmentDisposition } from '../../lib/download-filename.ts';
import { paginationQuery } from '../../lib/pagination.ts';
import type { OrgAccess } from '../orgs/org-access.ts';
import type { DocumentsService } from './documents.service.ts';
import { errorSchema, orgParams, sessionSecurity } from '../../lib/http-schemas.ts';
import { orgOf } from '../../lib/request-context.ts';

const documentSchema = z.object({
  id: z.uuid(),
  title: z.string(),
  sizeBytes: z.int(),
  createdByUserId: z.uuid().nullable(),
  actionId: z.uuid().nullable(),
  agentName: z
    .string()
    .nullable()
    .describe('The agent whose action wrote it; null when no action did, or its agent was deleted since'),
  createdAt: z.date(),
});
const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 404: errorSchema };

export function documentsRoutes(deps: { documents: DocumentsService; orgAccess: OrgAccess }): FastifyPluginAsyncZod {
  return async (app) => {
    // Any member may read the org's documents (agents write them for the people they act for).
    const preHandler = deps.orgAccess('Guest');
    const common = { tags: ['documents'], security: sessionSecurity };

    app.get(
      '/orgs/:org/documents',
      {
        schema: {
          operationId: 'listDocuments',
          ...common,
          summary: "The org's generated documents, newest first",
          params: orgParams,
          querystring: paginationQuery,
          response: { 200: z.object({ documents: z.array(documentSchema), nextCursor: z.string().nullable() }), ...errors },
        },
        preHandler,
      },
      async (request) => {
        const page = await deps.documents.list(orgOf(request).id, request.query);
        return { documents: page.items, nextCursor: page.nextCursor };
      },
    );

    app.get(
      '/orgs/:org/documents/:documentId',
      {
        schema: {
          operationId: 'downloadDocument',
          ...common,
          summary: 'Download a document (application/pdf)',
          params: orgParams.extend({ documentId: z.uuid() }),
          response: { ...errors },
          'x-binary-response': 'application/pdf',
        },
        preHandler,
      },
      async (request, reply) => {
        const { filename, pdf } = await deps.documents.download(orgOf(request).id, request.params.documentId);
        // A Buffer is sent as it is: the error schemas above apply to JSON answers only.
        return reply
          .type('application/pdf')
          .header('content-disposition', attachmentDisposition(filename))
          .send(pdf as never);
      },
    );
  };
}
