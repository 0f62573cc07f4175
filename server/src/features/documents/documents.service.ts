import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB } from '../../db/schema.ts';
import { pdfFileName } from '../../lib/download-filename.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { storableText } from '../../lib/json-input.ts';
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
    ): Promise<{ documentId: string } & MissingCharactersNote> {
      const parsed = generateDocumentInput.safeParse(input);
      if (!parsed.success)
        throw new AppError(
          'validation_failed',
          parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
        );
      // The model's text as PostgreSQL can store it: NUL and unpaired surrogates become U+FFFD, drawn as �.
      const title = storableText(parsed.data.title);
      const content = storableText(parsed.data.content);
      const { pdf, missingCharacters } = await deps.renderer.render(title, content, origin.signal);
      const document = await documentsRepo.insert(deps.db, {
        id: randomUUID(),
        orgId,
        title,
        contentMarkdown: content,
        pdf,
        createdByUserId: origin.userId ?? null,
        actionId: origin.actionId ?? null,
        toolCallId: (origin.actionId && origin.toolCallId) || null,
      });
      const documentId = document?.id ?? (await documentsRepo.findByToolCall(deps.db, origin.actionId!, origin.toolCallId!))!.id;
      return { documentId, ...missingCharactersNote(missingCharacters) };
    },

    async list(orgId: string, options: { limit: number; cursor?: string }) {
      const rows = await documentsRepo.list(deps.db, orgId, options.limit, decodeCursor(options.cursor));
      return toPage(rows, options.limit);
    },

    async download(orgId: string, id: string): Promise<{ filename: string; pdf: Buffer }> {
      const document = await documentsRepo.findPdf(deps.db, orgId, id);
      if (!document) throw notFound('Document');
      return { filename: pdfFileName(document.title), pdf: Buffer.from(document.pdf) };
    },
  };
}

export type DocumentsService = ReturnType<typeof createDocumentsService>;

interface MissingCharactersNote {
  /** Characters the document shows as empty boxes (none of its fonts has a glyph for them), each once. */
  missingCharacters?: string[];
  note?: string;
}

const MAX_LISTED = 20;

/** Tells the model (and the ledger's reader) which characters did not make it into the PDF, so it can write them another way. */
function missingCharactersNote(missing: string[]): MissingCharactersNote {
  if (missing.length === 0) return {};
  const listed = missing
    .slice(0, MAX_LISTED)
    .map((character) => `${character} (U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`);
  const more = missing.length > MAX_LISTED ? ` and ${missing.length - MAX_LISTED} more` : '';
  return {
    missingCharacters: missing.slice(0, 100),
    note:
      "Shown as empty boxes: none of the document's fonts has a glyph for them (in bold, where they are set in " +
      `bold): ${listed.join(', ')}${more}. Where they matter, write them another way (in Latin letters, ` +
      'for example) and generate the document again.',
  };
}

/** The generateDocument tool: Markdown in, a stored PDF's id out. */
export function generateDocumentTool(documents: DocumentsService) {
  return defineTool({
    name: 'generateDocument',
    description:
      'Writes a PDF document from a title and Markdown content (headings, lists, tables, code, links, quotes; a table ' +
      'of more than 10 columns is set in parts that repeat its first column) and ' +
      'stores it with the organization. Returns its documentId, which sendEmail can attach. Images are not included. ' +
      'Its fonts cover Latin, Greek, Cyrillic, Arabic, Hebrew, Chinese, Japanese, Korean, the scripts of India, Thai, ' +
      'Lao, Khmer, Ethiopic and emoji, but not Myanmar or Tibetan: the result lists the characters shown as empty boxes.',
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
