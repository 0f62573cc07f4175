import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { EmailIntegrationRow, EmailMessageRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { ProcessBus } from '../../lib/process-bus.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { mailbox, newMessageId, referencesAfter, replySubject } from './email-content.ts';
import { emailIntegrationRepo } from './email-integration.repo.ts';
import { emailMessagesRepo } from './email-messages.repo.ts';
import { inboxRoutesChanged } from './inbox-routes.ts';
import { inboxesRepo } from './inboxes.repo.ts';
import { autoReplyRefusal } from './loop-guards.ts';
import { MailProviderError } from './mail-client.ts';
import type { DeliveryExtras, OutboundMail } from './outbound-mail.ts';
import { outboundRepo } from './outbound.repo.ts';

/** An outbound message as a sender describes it: threading, addresses and subject follow from it. */
export interface ThreadMessage {
  orgId: string;
  /** The thread it goes into: an existing one, or a new one with this title. */
  thread: { id: string } | { newTitle: string };
  /** The message it answers: In-Reply-To, References and a "Re:" subject come from it. */
  answers?: { messageId: string | null; referenceIds: string[]; subject: string } | null;
  from: { address: string; name: string | null };
  to: string[];
  /** A new conversation's subject, or the answer's when the answered message has none. */
  subject: string;
  text: string;
  html?: string | null;
  inboxId?: string | null;
  actionId?: string | null;
  toolCallId?: string | null;
}

/** How a send ended: sent, or refused by the provider (the message is marked failed; `refusal` is the provider's words). */
export type SendOutcome = { sent: true; message: EmailMessageRow } | { sent: false; message: EmailMessageRow; refusal: string };

/** A send left for a later try (`retryTransient`): the provider did not take it now, and may later. */
export const isSendToRetry = (error: unknown): error is MailProviderError =>
  error instanceof MailProviderError && error.transient;

/**
 * Email's one way to write an outbound message into a thread and deliver it, for its own sendEmail
 * and for other features (approval emails and their answers): the message is stored first (with
 * whatever the sender stores beside it, in the same transaction), then sent. Also what those
 * features ask of email before they send: the org's integration, the suppression list, the inbox
 * that receives replies, and whether a received message was sent automatically.
 */
export function createThreadMail(deps: {
  db: Kysely<DB>;
  bus: Pick<ProcessBus, 'publish'>;
  deliver: OutboundMail;
  box: SecretBox;
  logger: Logger;
}) {
  const { db } = deps;

  /**
   * Stores the message (status `sending`) in its thread, with `alongside` in the same transaction
   * (without it, the message is one statement), and the send's extras if they are to be kept sealed.
   */
  async function store(
    message: ThreadMessage,
    alongside?: (trx: Kysely<DB>, row: EmailMessageRow) => Promise<void>,
    sealedExtras: string | null = null,
  ): Promise<EmailMessageRow> {
    const { answers } = message;
    const insert = (trx: Kysely<DB>) =>
      emailMessagesRepo.insertMessage(
        trx,
        {
          id: randomUUID(),
          orgId: message.orgId,
          threadId: 'id' in message.thread ? message.thread.id : randomUUID(),
          inboxId: message.inboxId ?? null,
          direction: 'outbound',
          messageId: newMessageId(message.from.address),
          inReplyTo: answers?.messageId ?? null,
          referenceIds: JSON.stringify(answers ? referencesAfter(answers) : []),
          fromAddress: mailbox(message.from.address, message.from.name),
          toAddresses: JSON.stringify(message.to),
          subject: answers ? replySubject(answers.subject || message.subject) : message.subject,
          textBody: message.text,
          htmlBody: message.html ?? null,
          status: 'sending',
          actionId: message.actionId ?? null,
          toolCallId: message.toolCallId ?? null,
          sealedExtras,
        },
        'newTitle' in message.thread ? { newTitle: message.thread.newTitle.slice(0, 200) } : 'existing',
      );
    if (!alongside) return insert(db);
    return db.transaction().execute(async (trx) => {
      const row = await insert(trx);
      await alongside(trx, row);
      return row;
    });
  }

  /**
   * Sends a stored message; a refusal by the provider is an outcome, anything else is thrown. With
   * `retryTransient`, so is a failure worth another try (MailProviderError.transient): the message
   * stays `sending`, for the caller's retry to send again with the same idempotency key (`resume`, or
   * `deliver` again).
   */
  async function deliver(
    integration: EmailIntegrationRow,
    message: EmailMessageRow,
    idempotencyKey: string,
    extras?: DeliveryExtras,
    retryTransient = false,
  ): Promise<SendOutcome> {
    try {
      const sent = await deps.deliver(integration, message, idempotencyKey, extras, { keepSendingIfTransient: retryTransient });
      return { sent: true, message: sent };
    } catch (error) {
      if (!(error instanceof MailProviderError) || (retryTransient && isSendToRetry(error))) throw error;
      return { sent: false, message, refusal: error.message };
    }
  }

  return {
    store,
    deliver,

    /**
     * Stores the message in its thread, then sends it with the org's integration. With `resumable`,
     * the extras (which are not stored in the clear) are kept sealed until the provider answers, so
     * that `resume` can send a message cut off by a crash again as it was.
     */
    async send(
      integration: EmailIntegrationRow,
      message: ThreadMessage,
      options: {
        idempotencyKey: (row: EmailMessageRow) => string;
        extras?: DeliveryExtras;
        alongside?: Parameters<typeof store>[1];
        resumable?: boolean;
        /** A failure worth another try is thrown, and the message left `sending`, for the caller's retry to send. */
        retryTransient?: boolean;
      },
    ): Promise<SendOutcome> {
      const sealed = options.resumable ? deps.box.encrypt(JSON.stringify(options.extras ?? {})) : null;
      const row = await store(message, options.alongside, sealed);
      return deliver(integration, row, options.idempotencyKey(row), options.extras, options.retryTransient);
    },

    /**
     * Ends the send of a resumable message that a crash (or a failure worth another try) cut off:
     * sent again (still `sending`) with the same extras and the same idempotency key as before, so
     * that the provider sends it once; or found sent, if the provider's answer was recorded. Undefined
     * when it cannot: not the org's, refused, stored without sealed extras, or sealed under another key.
     */
    async resume(
      integration: EmailIntegrationRow,
      orgId: string,
      messageRowId: string,
      idempotencyKey: (row: EmailMessageRow) => string,
      retryTransient = false,
    ): Promise<SendOutcome | undefined> {
      const row = await outboundRepo.outbound(db, orgId, messageRowId);
      if (!row || row.status === 'failed') return undefined;
      if (row.status !== 'sending') return { sent: true, message: row };
      if (!row.sealedExtras) return undefined;
      let extras: DeliveryExtras;
      try {
        extras = JSON.parse(deps.box.decrypt(row.sealedExtras)) as DeliveryExtras;
      } catch (error) {
        // Sealed under another key (ENCRYPTION_MASTER_KEY changed since): the sender makes a new message.
        deps.logger.warn({ err: error, messageRowId }, 'a cut-off message could not be opened to be sent again');
        return undefined;
      }
      return deliver(integration, row, idempotencyKey(row), extras, retryTransient);
    },

    /** A resumable message cut off by a crash that is not to be sent after all: marked failed, with why, its extras gone. */
    abandon: async (orgId: string, messageRowId: string, detail: string): Promise<void> => {
      await outboundRepo.abandon(db, orgId, messageRowId, detail);
    },

    integrationOf: (orgId: string) => emailIntegrationRepo.find(db, orgId),

    /** Why mail to this address is not sent (the suppression list), if it is not. */
    async suppression(orgId: string, address: string): Promise<string | undefined> {
      const [suppressed] = await outboundRepo.suppressedAmong(db, orgId, [address.toLowerCase()]);
      return suppressed && `${address} is on the suppression list (${suppressed.reason})`;
    },

    /** Makes sure that mail to the address comes back through the inbound path: an inbox (without agents) if it has none. */
    async ensureInbox(orgId: string, address: string, displayName: string): Promise<void> {
      const lower = address.toLowerCase();
      if ((await emailMessagesRepo.inboxesAt(db, orgId, [lower])).length > 0) return;
      try {
        await inboxesRepo.insert(db, { id: randomUUID(), orgId, emailAddress: lower, displayName });
        await inboxRoutesChanged.inbox(deps.bus, lower);
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        deps.logger.warn({ orgId }, `the inbox ${lower} exists already (made meanwhile, or by another org)`);
      }
    },

    /** Why a received message was sent automatically (and must not be answered), if it was. */
    async automatic(message: { headers: Record<string, string>; from: string }): Promise<string | undefined> {
      return autoReplyRefusal({ ...message, fromOwnAddress: await emailMessagesRepo.isOwnAddress(db, message.from) });
    },
  };
}

export type ThreadMail = ReturnType<typeof createThreadMail>;
