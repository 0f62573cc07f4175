import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { isAcceptedInstant } from '../../lib/instants.ts';
import { decodeCursor, encodeCursor } from '../../lib/pagination.ts';
import { emailThreadsRepo } from './email-threads.repo.ts';

const encodeSuppressionCursor = (row: { createdAt: Date; address: string }) =>
  Buffer.from(`${row.createdAt.toISOString()}|${row.address}`).toString('base64url');

function decodeSuppressionCursor(value: string | undefined) {
  if (value === undefined) return undefined;
  const text = Buffer.from(value, 'base64url').toString('utf8');
  const separator = text.indexOf('|');
  const createdAt = new Date(text.slice(0, separator));
  if (separator < 0 || !isAcceptedInstant(createdAt))
    throw new AppError('validation_failed', 'querystring/cursor: not a cursor this API returned');
  return { createdAt, address: text.slice(separator + 1) };
}

/** Email as operators read it: threads, messages (sanitized HTML, text, headers, attachments, delivery), suppressions. */
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function createEmailThreadsService(deps: { db: Kysely<DB> }) {
  const { db } = deps;

  return {
    async list(orgId: string, query: { inboxId?: string; limit: number; cursor?: string }) {
      const rows = await emailThreadsRepo.list(db, orgId, {
        inboxId: query.inboxId,
        limit: query.limit,
        after: decodeCursor(query.cursor),
      });
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return {
        threads: page.map((row) => ({
          ...row,
          messageCount: Number(row.messageCount ?? 0),
          inboxId: row.inboxId ?? null,
          startedBy: row.startedBy ?? null,
        })),
        nextCursor: rows.length > query.limit && last ? encodeCursor({ createdAt: last.updatedAt, id: last.id }) : null,
      };
    },

    async get(orgId: string, threadId: string) {
      const thread = await emailThreadsRepo.findThread(db, orgId, threadId);
      if (!thread) throw notFound('Email thread');
      const messages = await emailThreadsRepo.messages(db, threadId);
      const ids = messages.map((message) => message.id);
      const [attachments, events] = await Promise.all([
        emailThreadsRepo.attachmentsOf(db, ids),
        emailThreadsRepo.eventsOf(db, ids),
      ]);
      return {
        ...thread,
        messages: messages.map((message) => ({
          id: message.id,
          direction: message.direction,
          inboxId: message.inboxId,
          from: message.fromAddress,
          to: message.toAddresses,
          cc: message.ccAddresses,
          subject: message.subject,
          messageId: message.messageId,
          inReplyTo: message.inReplyTo,
          references: message.referenceIds,
          providerEmailId: message.providerEmailId,
          providerMessageId: message.providerMessageId,
          sentAt: message.sentAt,
          createdAt: message.createdAt,
          text: message.textBody,
          html: message.htmlBody,
          headers: message.headers,
          status: message.status,
          statusDetail: message.statusDetail,
          actionId: message.relatedActionId,
          attachments: attachments
            .filter((attachment) => attachment.messageId === message.id)
            .map(({ messageId: _message, sizeBytes, ...attachment }) => ({ ...attachment, sizeBytes: Number(sizeBytes) })),
          deliveryEvents: events
            .filter((event) => event.messageId === message.id)
            .map((event) => ({ type: event.type, data: event.data ?? null, occurredAt: event.occurredAt })),
        })),
      };
    },

    async attachment(orgId: string, attachmentId: string) {
      const row = await emailThreadsRepo.attachmentContent(db, orgId, attachmentId);
      if (!row) throw notFound('Attachment');
      if (!row.content)
        throw new AppError(
          'not_found',
          `The attachment has no content: it was ${row.status === 'attached' ? 'a document since deleted' : row.status}`,
        );
      return { filename: row.filename, contentType: row.contentType, content: Buffer.from(row.content) };
    },

    /** A message's sanitized HTML, or its text as HTML when it had none: for the console's sandboxed frame. */
    async messageHtml(orgId: string, messageId: string): Promise<string> {
      const row = await emailThreadsRepo.messageHtml(db, orgId, messageId);
      if (!row) throw notFound('Email message');
      return row.htmlBody ?? `<pre style="white-space: pre-wrap; font-family: inherit">${escapeHtml(row.textBody)}</pre>`;
    },

    async suppressions(orgId: string, query: { limit: number; cursor?: string }) {
      const rows = await emailThreadsRepo.suppressions(db, orgId, query.limit, decodeSuppressionCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return { suppressions: page, nextCursor: rows.length > query.limit && last ? encodeSuppressionCursor(last) : null };
    },

    async removeSuppression(orgId: string, address: string): Promise<void> {
      if (!(await emailThreadsRepo.removeSuppression(db, orgId, address.trim().toLowerCase()))) throw notFound('Suppression');
    },
  };
}

export type EmailThreadsService = ReturnType<typeof createEmailThreadsService>;
