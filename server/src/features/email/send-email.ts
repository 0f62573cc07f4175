import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { EmailMessageRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import { pdfFileName } from '../../lib/download-filename.ts';
import { defineTool, type ToolContext } from '../agents/tool-registry.ts';
import { addressOf, renderMarkdownEmail } from './email-content.ts';
import type { EmailIntegrationService } from './email-integration.service.ts';
import { emailMessagesRepo } from './email-messages.repo.ts';
import { outboundRepo } from './outbound.repo.ts';
import { attachmentsOf, idempotencyKeyOf, type SendEmailAgain } from './send-email-again.ts';
import { isSendToRetry, type SendOutcome, type ThreadMail } from './thread-mail.ts';

type SendContext = NonNullable<Awaited<ReturnType<typeof outboundRepo.sendContext>>>;

const sendEmailInput = z.object({
  to: z.string().min(3).max(10_000).describe('The recipient address, or several separated by commas'),
  subject: z.string().min(1).max(998).describe('The subject (a reply in a thread keeps the thread\'s, with "Re:")'),
  body: z.string().min(1).max(200_000).describe('The message, in Markdown; it is sent as text and as HTML'),
  attachDocumentIds: z.array(z.uuid()).max(10).optional().describe('documentIds from generateDocument, attached as PDFs'),
});

type Input = z.output<typeof sendEmailInput>;

/**
 * The `sendEmail` tool. In an action that answers an inbox's email, the reply goes from that inbox,
 * in its thread (In-Reply-To, References, "Re:" subject); otherwise from the integration's sender,
 * as a new thread. The message is stored before it is sent and the tool call names it, so a
 * resumed run finds it and never sends twice (the provider's idempotency key is the call's id). A
 * refusal (no integration, unverified domain, suppressed or too many recipients, unknown document,
 * the provider's) is an error the model sees. A send the provider did not take at once is sent again
 * by a job, with the same key, and the model is told so: calling again would send a second email.
 */
export function createSendEmail(deps: {
  db: Kysely<DB>;
  threadMail: Pick<ThreadMail, 'store' | 'deliver'>;
  later: Pick<SendEmailAgain, 'schedule'>;
  integration: Pick<EmailIntegrationService, 'requireVerifiedDomain'>;
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
    if (distinct.length > deps.maxRecipients)
      throw new Error(`Too many recipients: ${distinct.length} (at most ${deps.maxRecipients})`);
    return distinct;
  }

  /** Stores the message of this call before it is sent (a resumed run finds it by the call's id). */
  function storeMessage(
    context: ToolContext,
    input: Input,
    sender: { from: string; fromName: string | null; answered: SendContext['answered'] },
    recipients: string[],
    documents: Array<{ id: string; title: string; sizeBytes: number }>,
  ) {
    const { answered } = sender;
    const rendered = renderMarkdownEmail(input.body);
    return deps.threadMail.store(
      {
        orgId: context.orgId,
        thread: answered ? { id: answered.threadId } : { newTitle: input.subject },
        answers: answered,
        from: { address: sender.from, name: sender.fromName },
        to: recipients,
        subject: input.subject,
        text: rendered.text,
        html: rendered.html,
        inboxId: answered?.inboxId ?? null,
        actionId: context.actionId,
        toolCallId: context.toolCallId,
      },
      documents.length === 0
        ? undefined
        : (trx, message) =>
            emailMessagesRepo.insertAttachments(
              trx,
              documents.map((document, position) => ({
                id: randomUUID(),
                orgId: context.orgId,
                messageId: message.id,
                position,
                documentId: document.id,
                filename: pdfFileName(document.title),
                contentType: 'application/pdf',
                sizeBytes: document.sizeBytes,
                status: 'attached' as const,
              })),
            ),
    );
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

  const queuedResultOf = (message: EmailMessageRow, why: string) => ({
    ...resultOf(message),
    sent: false,
    queued: true,
    note:
      `The email provider did not take it at once (${why}). It is kept and sent again in the next minutes with the ` +
      'same idempotency key, so that it goes once: do not send it again.',
  });

  async function send(input: Input, context: ToolContext) {
    // Bad recipients are refused after a stored call's result is returned (a resumed run sends nothing again).
    let recipients: string[] = [];
    let refusal: unknown;
    try {
      recipients = recipientsOf(input.to);
    } catch (error) {
      refusal = error;
    }
    const { orgId, actionId, toolCallId } = context;
    const found = await outboundRepo.sendContext(db, { orgId, actionId, toolCallId, recipients });
    if (!found) throw new Error('Email integration not configured');
    const { integration, answered } = found;
    const existing = found.storedId ? await outboundRepo.ofToolCall(db, actionId, toolCallId) : undefined;
    if (existing?.status === 'failed') throw new Error(`Not sent: ${existing.statusDetail ?? 'the provider refused it'}`);
    if (existing && existing.status !== 'sending') return resultOf(existing);
    if (refusal) throw refusal;

    const { suppressed } = found;
    if (suppressed.length > 0) {
      const list = suppressed.map((row) => `${row.address} (${row.reason})`).join(', ');
      throw new Error(
        `Not sent: ${list} ${suppressed.length === 1 ? 'is' : 'are'} on the suppression list; an operator can remove ` +
          `an address from it`,
      );
    }
    const ids = [...new Set(input.attachDocumentIds ?? [])];
    const documents = await outboundRepo.documents(db, context.orgId, ids);
    const missing = ids.filter((id) => !documents.some((document) => document.id === id));
    if (missing.length > 0)
      throw new Error(`Document not found: ${missing.join(', ')} (attach documentIds that generateDocument returned)`);
    const from = answered?.emailAddress ?? integration.fromEmail;
    await deps.integration.requireVerifiedDomain(context.orgId, from, integration);
    const message =
      existing ??
      (await storeMessage(
        context,
        input,
        { from, fromName: answered?.emailAddress ? answered.displayName : integration.fromName, answered },
        recipients,
        documents,
      ));

    let outcome: SendOutcome;
    try {
      const attachments = attachmentsOf(documents);
      outcome = await deps.threadMail.deliver(integration, message, idempotencyKeyOf(context), { attachments }, true);
    } catch (error) {
      if (!isSendToRetry(error)) throw error;
      await deps.later.schedule(message, error.message);
      return queuedResultOf(message, error.message);
    }
    if (!outcome.sent) throw new Error(`The email provider did not send it: ${outcome.refusal}`);
    return resultOf(outcome.message);
  }

  return defineTool({
    name: 'sendEmail',
    description:
      'Sends an email from the organization. In an action that answers an email, the reply goes from the inbox in the ' +
      'same thread. Attach PDFs made with generateDocument by their documentIds.',
    inputSchema: sendEmailInput,
    execute: send,
  });
}
