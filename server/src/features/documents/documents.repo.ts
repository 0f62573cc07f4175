import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { olderThan } from '../../db/keyset.ts';
import type { Cursor } from '../../lib/pagination.ts';

const listed = ['id', 'title', 'sizeBytes', 'createdByUserId', 'actionId', 'createdAt'] as const;

export const documentsRepo = {
  /** Inserts the document; for a tool call that made its document already, returns nothing. */
  insert: (
    db: Kysely<DB>,
    document: {
      id: string;
      orgId: string;
      title: string;
      contentMarkdown: string;
      pdf: Uint8Array;
      createdByUserId: string | null;
      actionId: string | null;
      toolCallId: string | null;
    },
  ) =>
    db
      .insertInto('documents')
      .values({ ...document, sizeBytes: document.pdf.byteLength })
      .onConflict((oc) => oc.columns(['actionId', 'toolCallId']).where('toolCallId', 'is not', null).doNothing())
      .returning(listed)
      .executeTakeFirst(),

  findByToolCall: (db: Kysely<DB>, actionId: string, toolCallId: string) =>
    db
      .selectFrom('documents')
      .select('id')
      .where('actionId', '=', actionId)
      .where('toolCallId', '=', toolCallId)
      .executeTakeFirst(),

  list: (db: Kysely<DB>, orgId: string, limit: number, after?: Cursor) =>
    db
      .selectFrom('documents')
      .select(listed)
      // The agent whose action wrote it, as the list names it (null: none, or deleted since).
      .select((eb) =>
        eb
          .selectFrom('actions as a')
          .innerJoin('agents as g', 'g.id', 'a.agentId')
          .select('g.name')
          .whereRef('a.id', '=', 'documents.actionId')
          .whereRef('a.orgId', '=', 'documents.orgId')
          .as('agentName'),
      )
      .where('orgId', '=', orgId)
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 'createdAt', 'id')))
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute(),

  findPdf: (db: Kysely<DB>, orgId: string, id: string) =>
    db.selectFrom('documents').select(['title', 'pdf']).where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),
};
