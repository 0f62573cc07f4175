import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { EmailMessageStatus, EmailNotificationRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import { addressesOf, normalizeMessageId } from './email-content.ts';
import { type MailNotification, TAG_MESSAGE, uuidTag } from './notification-payload.ts';
import { notificationsRepo } from './notifications.repo.ts';
import { outboundRepo } from './outbound.repo.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { MailClient } from './mail-client.ts';

/** Progress of a sent email; a later event of a lower rank (they may arrive out of order) does not move it back. */
const RANK: Partial<Record<EmailMessageStatus, number>> = {
  sending: 0,
  sent: 1,
  delivery_delayed: 2,
  delivered: 3,
  opened: 4,
  clicked: 5,
};
/** Ends that later progress does not undo. */
const FINAL = new Set<EmailMessageStatus>(['bounced', 'complained', 'failed', 'suppressed']);

const STATUS_OF: Record<string, EmailMessageStatus> = {
  'email.sent': 'sent',
  'email.delivered': 'delivered',
  'email.delivery_delayed': 'delivery_delayed',
  'email.opened': 'opened',
  'email.clicked': 'clicked',
  'email.bounced': 'bounced',
  'email.complained': 'complained',
  'email.failed': 'failed',
  'email.suppressed': 'suppressed',
};

/**
 * Where a notification moves a message. `failed` with no email id of the provider's is this service
 * giving up on a send whose answer it never had (a refused send gets no notifications): not final,
 * what the provider says of the email wins.
 */
function nextStatus(
  message: { status: EmailMessageStatus; providerEmailId: string | null },
  incoming: EmailMessageStatus,
): EmailMessageStatus {
  const current = message.status === 'failed' && !message.providerEmailId ? 'sending' : message.status;
  if (FINAL.has(current)) return current;
  if (FINAL.has(incoming)) return incoming;
  return (RANK[incoming] ?? 0) > (RANK[current] ?? 0) ? incoming : current;
}

/** What the provider said, in words for the message's status. */
function detailOf(payload: MailNotification): string | null {
  const { data } = payload;
  if (data.bounce) {
    const kind = `${data.bounce.type ?? 'Bounce'}${data.bounce.subType ? ` (${data.bounce.subType})` : ''}`;
    return `${kind}: ${data.bounce.message ?? ''}`.trim();
  }
  if (data.failed?.reason) return data.failed.reason;
  if (data.suppressed?.message) return data.suppressed.message;
  if (payload.type === 'email.complained') return 'The recipient marked the email as spam';
  return null;
}

/**
 * Notifications about email we sent: each joins the message's delivery timeline and moves its
 * status on. A permanent bounce or a complaint puts the recipient on the org's suppression list
 * (sendEmail refuses suppressed addresses); a temporary bounce only shows in the timeline.
 */
export function createDeliveryEvents(deps: { db: Kysely<DB>; box: SecretBox; mail: MailClient; clock: Clock }) {
  const { db } = deps;

  return {
    /**
     * Stores the Message-ID the provider gave a sent email (it may replace ours; replies may quote
     * only that one). Just after the send the provider may not know it yet: then this throws and
     * the job retries. A notification (email.sent, delivered) that carries it first makes this moot.
     */
    async lookupMessageId(messageRowId: string): Promise<void> {
      const message = await outboundRepo.awaitingMessageId(db, messageRowId);
      if (!message?.providerEmailId) return;
      const sent = await deps.mail(deps.box.decrypt(message.apiKeyEncrypted)).getEmail(message.providerEmailId);
      const providerMessageId = sent.message_id ? normalizeMessageId(sent.message_id) : undefined;
      if (!providerMessageId) throw new Error('The provider does not know the Message-ID of the email yet');
      await outboundRepo.setProviderMessageId(db, message.id, providerMessageId);
    },

    async record(notification: EmailNotificationRow, payload: MailNotification): Promise<void> {
      const orgId = notification.orgId!;
      const incoming = STATUS_OF[payload.type];
      if (!incoming) {
        return void (await notificationsRepo.settle(db, notification.id, {
          status: 'ignored',
          reason: `${payload.type} is not an event this service reads`,
        }));
      }
      const permanentBounce = payload.type === 'email.bounced' && payload.data.bounce?.type?.toLowerCase() !== 'temporary';
      const detail = detailOf(payload);
      const occurredAt = new Date(Date.parse(payload.data.created_at ?? payload.created_at ?? '') || deps.clock.now().getTime());
      const providerMessageId = payload.data.message_id ? (normalizeMessageId(payload.data.message_id) ?? null) : null;

      await db.transaction().execute(async (trx) => {
        // The message's lock orders the events of one email (they may be processed at once): each
        // moves on from the status the one before it left.
        const message = await outboundRepo.lockSentFor(trx, orgId, payload.data.email_id, uuidTag(payload, TAG_MESSAGE));
        if (!message) {
          return void (await notificationsRepo.settle(trx, notification.id, {
            status: 'ignored',
            reason: 'no email we sent has this email_id',
          }));
        }
        // Then the notification's: a processor that took it over meanwhile (this one's lease lapsed
        // or was given up) may have recorded it already; then nothing is recorded twice.
        const [settled] = await notificationsRepo.settle(trx, notification.id, { status: 'processed' });
        if (!settled?.numUpdatedRows) return;
        const status = payload.type === 'email.bounced' && !permanentBounce ? message.status : nextStatus(message, incoming);
        await outboundRepo.recordEvent(trx, {
          id: randomUUID(),
          orgId,
          messageId: message.id,
          type: payload.type.replace(/^email\./, ''),
          data: JSON.stringify({
            ...(payload.data.bounce ? { bounce: payload.data.bounce } : {}),
            ...(payload.data.failed ? { failed: payload.data.failed } : {}),
            ...(payload.data.suppressed ? { suppressed: payload.data.suppressed } : {}),
            ...(payload.data.click ? { click: payload.data.click } : {}),
          }),
          occurredAt,
        });
        await outboundRepo.updateDelivery(trx, message.id, {
          status,
          // The detail says why a message is in its status: one moved on says the new status's, or nothing.
          ...(status !== message.status ? { statusDetail: detail?.slice(0, 2000) ?? null } : {}),
          providerEmailId: message.providerEmailId ?? payload.data.email_id,
          providerMessageId: message.providerMessageId ?? providerMessageId,
        });
        if (permanentBounce || payload.type === 'email.complained' || payload.type === 'email.suppressed') {
          const reason =
            payload.type === 'email.complained'
              ? 'complained'
              : payload.type === 'email.suppressed'
                ? 'provider_suppressed'
                : 'bounced';
          await outboundRepo.suppress(
            trx,
            addressesOf(payload.data.to?.length ? payload.data.to : message.toAddresses).map((address) => ({
              orgId,
              address,
              reason,
              detail: detail?.slice(0, 2000) ?? null,
              messageId: message.id,
            })),
          );
        }
      });
    },
  };
}

export type DeliveryEvents = ReturnType<typeof createDeliveryEvents>;
