import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { EmailMessageRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { defineTool, type ToolContext } from '../agents/tool-registry.ts';
import { addressOf, newMessageId, normalizeMessageId, renderMarkdownEmail, replySubject } from './email-content.ts';
import type { EmailIntegrationService } from './email-integration.service.ts';
import { emailIntegrationRepo } from './email-integration.repo.ts';
import { emailMessagesRepo } from './email-messages.repo.ts';
import { type MailClient, MailProviderError } from './mail-client.ts';
import { TAG_MESSAGE, TAG_ORG } from './notification-payload.ts';
import { outboundRepo } from './outbound.repo.ts';

const sendEmailInput = z.object({
  to: z.string().min(3).max(10_000).describe('The recipient address, or several separated by commas'),
  subject: z.string().min(1).max(998).describe('The subject (a reply in a thread keeps the thread\'s, with "Re:")'),
  body: z.string().min(1).max(200_000).describe('The message, in Markdown; it is sent as text and as HTML'),
  attachDocumentIds: z.array(z.uuid()).max(10).optional().describe('documentIds from generateDocument, attached as PDFs'),
});

type Input = z.output<typeof sendEmailInput>;

/** `Name <address>`, with the characters that would break the header taken out of the name. */
const mailbox = (address: string, name: string | null | undefined) => {
  const clean = name?.replace(/["\\<>\r\n]/g, '').trim();
  return clean ? `"${clean}" <${address}>` : address;
};

const pdfName = (title: string) => `${title.replace(/[\\/:*?"<>|\r\n]/g, '_').slice(0, 200) || 'document'}.pdf`;

/** The provider keeps an idempotency key 24 h and takes at most 256 characters: the call's own id, per action. */
const idempotencyKeyOf = (context: ToolContext) => {
  const key = `${context.actionId}/${context.toolCallId}`;
  return key.length <= 256 ? key : `${context.actionId}/${createHash('sha256').update(context.toolCallId).digest('base64url')}`;
};

/**
 * The `sendEmail` tool. In an action that answers an inbox's email, the reply goes from that inbox,
 * in its thread (In-Reply-To, References, "Re:" subject); otherwise from the integration's sender,
 * as a new thread. The message is stored before it is sent and the tool call names it, so a
 * resumed run finds it and never sends twice (the provider's idempotency key is the call's id). A
 * refusal (no integration, unverified domain, suppressed or too many recipients, unknown document)
 * is an error the model sees.
 */
export function createSendEmail(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  mail: MailClient;
  integration: Pick<EmailIntegrationService, 'requireVerifiedDomain'>;
  jobs: Pick<JobRunner, 'enqueue'>;
  clock: Clock;
  maxRecipients: number;
}) {
  const { db } = deps;

  function recipientsOf(to: string): string[] {
    const parts = to
      .split(/[,;]/)
      .map((part) => part.trim())
      .filter(Boolean);
    const addresses = parts.map((part) => {
      const address = addressOf(part);
      if (!address) throw new Error(`"${part.slice(0, 100)}" is not an email address`);
      return address;
    });
    const distinct = [...new Set(addresses)];
    if (distinct.length > deps.maxRecipients) throw new Error(`Too many recipients: ${distinct.length} (at most ${deps.maxRecipients})`);
    return distinct;
  }

  /** Stores the message of this call before it is sent (a resumed run finds it by the call's id). */
  async function storeMessage(
    context: ToolContext,
    input: Input,
    sender: { from: string; fromName: string | null; answered: Awaited<ReturnType<typeof outboundRepo.answeredBy>> },
    recipients: string[],
    documents: Array<{ id: string; title: string; sizeBytes: number }>,
  ) {
    const { answered } = sender;
    const threadId = answered?.threadId ?? randomUUID();
    const rendered = renderMarkdownEmail(input.body);
    return db.transaction().execute(async (trx) => {
      if (!answered) await emailMessagesRepo.insertThread(trx, { id: threadId, orgId: context.orgId, title: input.subject.slice(0, 200) });
      const message = await emailMessagesRepo.insertMessage(trx, {
        id: randomUUID(),
        orgId: context.orgId,
        threadId,
        inboxId: answered?.inboxId ?? null,
        direction: 'outbound',
        messageId: newMessageId(sender.from),
        inReplyTo: answered?.messageId ?? null,
        referenceIds: JSON.stringify(
          answered ? [...answered.referenceIds, ...(answered.messageId ? [answered.messageId] : [])].slice(-100) : [],
        ),
        fromAddress: mailbox(sender.from, sender.fromName),
        toAddresses: JSON.stringify(recipients),
        subject: answered ? replySubject(answered.subject || input.subject) : input.subject,
        textBody: rendered.text,
        htmlBody: rendered.html,
        status: 'sending',
        actionId: context.actionId,
        toolCallId: context.toolCallId,
      });
      await emailMessagesRepo.insertAttachments(
        trx,
        documents.map((document, position) => ({
          id: randomUUID(),
          orgId: context.orgId,
          messageId: message.id,
          position,
          documentId: document.id,
          filename: pdfName(document.title),
          contentType: 'application/pdf',
          sizeBytes: document.sizeBytes,
          status: 'attached' as const,
        })),
      );
      await emailMessagesRepo.touchThread(trx, threadId);
      return message;
    });
  }

  const resultOf = (message: EmailMessageRow) => ({
    sent: true,
    emailId: message.providerEmailId,
    messageId: `<${message.messageId}>`,
    threadId: message.threadId,
    from: message.fromAddress,
    to: message.toAddresses,
    subject: message.subject,
  });

  async function send(input: Input, context: ToolContext) {
    const integration = await emailIntegrationRepo.find(db, context.orgId);
    if (!integration) throw new Error('Email integration not configured');
    const existing = await outboundRepo.ofToolCall(db, context.actionId, context.toolCallId);
    if (existing && existing.status !== 'sending') return resultOf(existing);

    const recipients = recipientsOf(input.to);
    const suppressed = await outboundRepo.suppressedAmong(db, context.orgId, recipients);
    if (suppressed.length > 0) {
      const list = suppressed.map((row) => `${row.address} (${row.reason})`).join(', ');
      throw new Error(
        `Not sent: ${list} ${suppressed.length === 1 ? 'is' : 'are'} on the suppression list; an operator can remove an address from it`,
      );
    }
    const ids = [...new Set(input.attachDocumentIds ?? [])];
    const documents = await outboundRepo.documents(db, context.orgId, ids);
    const missing = ids.filter((id) => !documents.some((document) => document.id === id));
    if (missing.length > 0)
      throw new Error(`Document not found: ${missing.join(', ')} (attach documentIds that generateDocument returned)`);
    const answered = await outboundRepo.answeredBy(db, context.orgId, context.actionId);
    const from = answered?.emailAddress ?? integration.fromEmail;
    await deps.integration.requireVerifiedDomain(context.orgId, from);
    const message =
      existing ??
      (await storeMessage(
        context,
        input,
        { from, fromName: answered?.emailAddress ? answered.displayName : integration.fromName, answered },
        recipients,
        documents,
      ));

    const headers: Record<string, string> = { 'Message-ID': `<${message.messageId}>` };
    if (message.inReplyTo) headers['In-Reply-To'] = `<${message.inReplyTo}>`;
    if (message.referenceIds.length > 0) headers.References = message.referenceIds.map((id) => `<${id}>`).join(' ');
    const api = deps.mail(deps.box.decrypt(integration.apiKeyEncrypted));
    let providerEmailId: string;
    try {
      ({ id: providerEmailId } = await api.sendEmail(
        {
          from: message.fromAddress,
          to: message.toAddresses,
          subject: message.subject,
          text: message.textBody,
          html: message.htmlBody ?? undefined,
          headers,
          attachments: documents.map((document) => ({
            filename: pdfName(document.title),
            content: Buffer.from(document.pdf).toString('base64'),
            content_type: 'application/pdf',
          })),
          tags: [
            { name: TAG_ORG, value: context.orgId },
            { name: TAG_MESSAGE, value: message.id },
          ],
        },
        idempotencyKeyOf(context),
      ));
    } catch (error) {
      if (!(error instanceof MailProviderError)) throw error;
      await outboundRepo.markFailed(db, message.id, `The provider refused it: ${error.message}`);
      throw new Error(`The email provider did not send it: ${error.message}`);
    }
    // The provider's Message-ID (it may replace ours; replies may quote only that one): asked now,
    // and if the provider does not know it yet (it may not, just after the send), by a job later.
    const providerMessageId = await api.getEmail(providerEmailId).then(
      (email) => (email.message_id ? (normalizeMessageId(email.message_id) ?? null) : null),
      () => null,
    );
    const sent = await outboundRepo.markSent(db, message.id, { providerEmailId, providerMessageId });
    if (!providerMessageId) {
      await deps.jobs.enqueue(
        'email.lookup-message-id',
        { messageRowId: message.id },
        { startAfter: new Date(deps.clock.now().getTime() + 3000) },
      );
    }
    return resultOf(sent);
  }

  return defineTool({
    name: 'sendEmail',
    description:
      'Sends an email from the organization. In an action that answers an email, the reply goes from the inbox in the same thread. Attach PDFs made with generateDocument by their documentIds.',
    inputSchema: sendEmailInput,
    execute: send,
  });
}
