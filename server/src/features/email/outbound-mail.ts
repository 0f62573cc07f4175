import type { Kysely } from 'kysely';
import type { EmailIntegrationRow, EmailMessageRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { normalizeMessageId } from './email-content.ts';
import { type MailClient, MailProviderError, type OutgoingEmail } from './mail-client.ts';
import { TAG_MESSAGE, TAG_ORG } from './notification-payload.ts';
import { outboundRepo } from './outbound.repo.ts';

/** What a send adds to the stored message: bodies that must not be stored (one-time links), headers, attachments. */
export interface DeliveryExtras {
  text?: string;
  html?: string;
  headers?: Record<string, string>;
  replyTo?: string[];
  attachments?: OutgoingEmail['attachments'];
}

/**
 * Sends an outbound message stored beforehand (status `sending`) with the org's integration, with its
 * threading headers and our tags (delivery events find it by them), then records the provider's id
 * and the Message-ID the provider gave it (asked now, or by a job if it does not know it yet). A
 * refusal marks the message failed and is thrown as the provider's MailProviderError; with
 * `keepSendingIfTransient`, a failure worth another try leaves it `sending`, for a later attempt.
 */
export function createOutboundMail(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  mail: MailClient;
  jobs: Pick<JobRunner, 'enqueue'>;
  clock: Clock;
}) {
  return async function deliver(
    integration: EmailIntegrationRow,
    message: EmailMessageRow,
    idempotencyKey: string,
    extras: DeliveryExtras = {},
    options: { keepSendingIfTransient?: boolean } = {},
  ): Promise<EmailMessageRow> {
    const headers: Record<string, string> = { 'Message-ID': `<${message.messageId}>`, ...extras.headers };
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
          text: extras.text ?? message.textBody,
          html: extras.html ?? message.htmlBody ?? undefined,
          headers,
          ...(extras.replyTo ? { reply_to: extras.replyTo } : {}),
          attachments: extras.attachments ?? [],
          tags: [
            { name: TAG_ORG, value: message.orgId },
            { name: TAG_MESSAGE, value: message.id },
          ],
        },
        idempotencyKey,
      ));
    } catch (error) {
      if (error instanceof MailProviderError && !(options.keepSendingIfTransient && error.transient))
        await outboundRepo.markFailed(deps.db, message.id, `The provider refused it: ${error.message}`);
      throw error;
    }
    // The provider's Message-ID (it may replace ours; replies may quote only that one): asked now,
    // and if the provider does not know it yet (it may not, just after the send), by a job later.
    const providerMessageId = await api.getEmail(providerEmailId).then(
      (email) => (email?.message_id ? (normalizeMessageId(email.message_id) ?? null) : null),
      () => null,
    );
    const sent = { ...message, ...(await outboundRepo.markSent(deps.db, message.id, { providerEmailId, providerMessageId })) };
    if (!providerMessageId) {
      await deps.jobs.enqueue(
        'email.lookup-message-id',
        { messageRowId: message.id },
        { startAfter: new Date(deps.clock.now().getTime() + 3000) },
      );
    }
    return sent;
  };
}

export type OutboundMail = ReturnType<typeof createOutboundMail>;
