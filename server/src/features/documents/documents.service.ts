import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB } from '../../db/schema.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { decodeCursor, toPage } from '../../lib/pagination.ts';
import { defineTool } from '../agents/tool-registry.ts';
import { documentsRepo } from './documents.repo.ts';
import type { RenderPool } from './render-pool.ts';

/** The generateDocument tool's input. */
export const generateDocumentInput = z.object({
  title: z.string().trim().min(1).max(200).describe('The document title'),
  content: z.string().min(1).max(200_000).describe('The document body, in Markdown'),
});

export function createDocumentsService(deps: { db: Kysely<DB>; renderer: Pick<RenderPool, 'render'> }) {
  return {
    /**
     * Renders the Markdown to a PDF and stores it with the org; the id goes into attachDocumentIds.
     * Made by a tool call, it is made once: running the call again returns the same document.
     */
    async generate(
      orgId: string,
      input: z.input<typeof generateDocumentInput>,
      origin: { userId?: string; actionId?: string; toolCallId?: string; signal?: AbortSignal } = {},
    ): Promise<{ documentId: string }> {
      const parsed = generateDocumentInput.safeParse(input);
      if (!parsed.success)
        throw new AppError(
          'validation_failed',
          parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
        );
      const pdf = await deps.renderer.render(parsed.data.title, parsed.data.content, origin.signal);
      const document = await documentsRepo.insert(deps.db, {
        id: randomUUID(),
        orgId,
        title: parsed.data.title,
        contentMarkdown: parsed.data.content,
        pdf,
        createdByUserId: origin.userId ?? null,
        actionId: origin.actionId ?? null,
        toolCallId: (origin.actionId && origin.toolCallId) || null,
      });
      if (document) return { documentId: document.id };
      const existing = await documentsRepo.findByToolCall(deps.db, origin.actionId!, origin.toolCallId!);
      return { documentId: existing!.id };
    },

    async list(orgId: string, options: { limit: number; cursor?: string }) {
      const rows = await documentsRepo.list(deps.db, orgId, options.limit, decodeCursor(options.cursor));
      return toPage(rows, options.limit);
    },

    async download(orgId: string, id: string): Promise<{ filename: string; pdf: Buffer }> {
      const document = await documentsRepo.findPdf(deps.db, orgId, id);
      if (!document) throw notFound('Document');
      const filename = `${document.title.replace(/[^\w .-]+/g, '_').slice(0, 100) || 'document'}.pdf`;
      return { filename, pdf: Buffer.from(document.pdf) };
    },
  };
}

export type DocumentsService = ReturnType<typeof createDocumentsService>;

/** The generateDocument tool: Markdown in, a stored PDF's id out. */
export function generateDocumentTool(documents: DocumentsService) {
  return defineTool({
    name: 'generateDocument',
    description:
      'Writes a PDF document from a title and Markdown content (headings, lists, tables, code, links, quotes) and ' +
      'stores it with the organization. Returns its documentId, which sendEmail can attach. Images are not included, ' +
      'and its font has no Chinese, Japanese or Korean characters and no emoji.',
    inputSchema: generateDocumentInput,
    execute: (input, context) =>
      documents.generate(context.orgId, input, {
        userId: context.userId,
        actionId: context.actionId,
        toolCallId: context.toolCallId,
        signal: context.signal,
      }),
  });
}
