import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { EmailInboxRow, EmailMessageRow, EmailNotificationRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Clock } from '../../lib/clock.ts';
import { createGroupCommit } from '../../lib/group-commit.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { addressOf } from './email-content.ts';
import { emailMessagesRepo } from './email-messages.repo.ts';
import { type FetchedEmail, fetchReceivedEmail, type InboundLimits } from './inbound-fetch.ts';
import { autoReplyRefusal } from './loop-guards.ts';
import type { MailClient } from './mail-client.ts';
import { type MailNotification, recipientsOf } from './notification-payload.ts';
import { notificationsRepo } from './notifications.repo.ts';
import { type AutoResponder, type ReceivedEmailRef, type ReceivedRoute, routesOfReceived } from './received-route.repo.ts';
import { type AnsweringAction, type ReceivedEmailParts, storeReceived } from './received-store.repo.ts';
import { transaction } from '../../db/after-commit.ts';

type Inbox = Pick<EmailInboxRow, 'id' | 'orgId' | 'emailAddress' | 'displayName'>;
type TranscriptMessage = Pick<
  EmailMessageRow,
  'id' | 'direction' | 'fromAddress' | 'toAddresses' | 'ccAddresses' | 'subject' | 'sentAt' | 'createdAt' | 'textBody'
>;

/** How much of a thread an answering agent reads: its newest messages, each cut to this many characters. */
const TRANSCRIPT_MESSAGES = 20;
const TRANSCRIPT_CHARS_PER_MESSAGE = 8000;

/**
 * `email.received`: the email is fetched with its attachments, stored in the thread that any of its
 * References / In-Reply-To ids names (or a new one), and, when the inbox has an agent that answers
 * automatically and nothing says it must not (loop guards, the per-thread hourly cap), an action of
 * that agent answers it. Message, attachments, ledger row and action commit together with the
 * notification's end, so a retried or taken-over notification never stores or answers twice.
 */
/** A feature that takes the replies to its own emails (an approval email's) instead of an agent answering them. */
export interface InboundReplyHook {
  /**
   * Whether the feature takes a received message, by the ids it answers (In-Reply-To, then
   * References newest first): the status detail users see, and what the feature writes in the
   * transaction that stores the message; undefined when it does not take it.
   */
  claim(
    db: Kysely<DB>,
    message: { orgId: string; ids: string[] },
  ): Promise<{ detail: string; take(trx: Kysely<DB>, messageRowId: string): Promise<void> } | undefined>;
}

/** The received message's row as it is stored, with what users see of its answer (`statusDetail`). */
function receivedMessageRow(
  row: { id: string; threadId: string },
  inbox: Inbox,
  providerEmailId: string,
  email: FetchedEmail,
  statusDetail: string,
) {
  return {
    ...row,
    orgId: inbox.orgId,
    inboxId: inbox.id,
    direction: 'inbound' as const,
    providerEmailId,
    messageId: email.messageId,
    inReplyTo: email.inReplyTo,
    referenceIds: JSON.stringify(email.references),
    fromAddress: email.from,
    toAddresses: JSON.stringify(email.to),
    ccAddresses: JSON.stringify(email.cc),
    subject: email.subject,
    sentAt: email.sentAt,
    textBody: email.text,
    htmlBody: email.html,
    headers: JSON.stringify(email.headers),
    authentication: email.authentication ? JSON.stringify(email.authentication) : null,
    status: 'received' as const,
    statusDetail,
  };
}

export function createInboundEmail(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  mail: MailClient;
  clock: Clock;
  /** An action for the email was committed: the run dispatchers claim it. */
  wakeRunners: () => void;
  /** Other features' claims on replies to their own emails (approval emails): such a message starts no agent's answer. */
  replyHook?: InboundReplyHook;
  limits: InboundLimits & { autoRepliesPerThreadPerHour: number };
}) {
  const { db } = deps;

  /**
   * The routes of the emails being processed are read together: the notifications a claim took start
   * at once, and their reads, made in the same turn of the event loop, go in one statement.
   */
  const routes = createGroupCommit<ReceivedEmailRef, ReceivedRoute>({
    maxInFlight: 2,
    maxBatch: 200,
    writeBatch: (emails) => routesOfReceived(db, emails),
    writeAlone: async (email) => (await routesOfReceived(db, [email]))[0],
  });

  /** Why the message gets no automatic answer, or the agent that answers it (a new thread had no replies yet). */
  async function answererOf(route: NonNullable<ReceivedRoute>, known: string | undefined, email: FetchedEmail) {
    const { responders } = route;
    if (responders.length === 0) return { refusal: 'no agent of the inbox answers automatically (autoRespond)' };
    const from = addressOf(email.from) ?? '';
    // The route read whether the notification's sender is ours; the fetched email's decides, when it differs.
    const { sender } = route;
    const fromOwnAddress = from === sender.address ? sender.own : await emailMessagesRepo.isOwnAddress(db, from);
    const guard = autoReplyRefusal({ headers: email.headers, from, fromOwnAddress });
    if (guard) return { refusal: `not answered automatically: ${guard}` };
    const recent = known ? await emailMessagesRepo.autoRepliesWithinHour(db, known) : 0;
    if (recent >= deps.limits.autoRepliesPerThreadPerHour) {
      return { refusal: `not answered automatically: the thread had ${recent} automatic replies within the hour (the limit)` };
    }
    const responder = responders.find((candidate) => candidate.runAsUserId);
    if (!responder) return { refusal: 'not answered automatically: the user who assigned the agent no longer exists' };
    return { responder };
  }

  /**
   * What the answering agent reads: the thread so far, oldest first, as text, ending with the received
   * message (not stored yet). A thread that the message starts holds only that message.
   */
  async function transcript(known: string | undefined, received: TranscriptMessage, attachments: FetchedEmail['attachments']) {
    const earlier = known ? await emailMessagesRepo.lastOfThread(db, known, TRANSCRIPT_MESSAGES - 1) : [];
    const names = [
      ...(await emailMessagesRepo.attachmentNames(
        db,
        earlier.map((message) => message.id),
      )),
      ...attachments.map((attachment) => ({ messageId: received.id, filename: attachment.filename })),
    ];
    return [...earlier, received].map((message) => ({
      direction: message.direction === 'inbound' ? 'received' : 'sent by us',
      from: message.fromAddress,
      to: message.toAddresses,
      ...(message.ccAddresses.length > 0 ? { cc: message.ccAddresses } : {}),
      date: (message.sentAt ?? message.createdAt).toISOString(),
      subject: message.subject,
      text:
        message.textBody.length > TRANSCRIPT_CHARS_PER_MESSAGE
          ? `${message.textBody.slice(0, TRANSCRIPT_CHARS_PER_MESSAGE)}\n[cut]`
          : message.textBody,
      attachments: names.filter((item) => item.messageId === message.id).map((item) => item.filename),
    }));
  }

  /** The action of the agent that answers the received message: what it is told, and the thread it reads. */
  async function answeringAction(
    notification: EmailNotificationRow,
    inbox: Inbox,
    email: FetchedEmail,
    responder: AutoResponder,
    stored: { actionId: string; known: string | undefined; message: ReturnType<typeof receivedMessageRow> },
  ): Promise<AnsweringAction> {
    const from = addressOf(email.from) ?? email.from;
    const { message } = stored;
    return {
      id: stored.actionId,
      agentId: responder.agentId,
      runAsUserId: responder.runAsUserId!,
      traceParent: notification.traceParent,
      instructions: [
        `An email arrived at the inbox ${inbox.displayName} <${inbox.emailAddress}>. Answer its newest message ` +
          `with sendEmail, to ${from}:`,
        'your reply goes out in the same thread, with its threading headers and a "Re:" subject.',
      ].join(' '),
      data: JSON.stringify({
        inbox: inbox.emailAddress,
        threadId: message.threadId,
        subject: email.subject,
        from,
        messages: await transcript(
          stored.known,
          { ...message, toAddresses: email.to, ccAddresses: email.cc, createdAt: deps.clock.now() },
          email.attachments,
        ),
      }),
      approvalRules: JSON.stringify(responder.approvalRules ?? { sendEmail: 'allow' }),
      argumentRules: JSON.stringify(responder.argumentRules),
      notify: JSON.stringify(responder.notify),
    };
  }

  /**
   * Reads first (its thread, whether a feature takes it; who may answer it came with its route), then
   * stores it all in one statement (storeReceived); in a transaction only with what a feature that
   * takes the message writes.
   */
  async function store(
    notification: EmailNotificationRow,
    payload: MailNotification,
    route: NonNullable<ReceivedRoute> & { inbox: Inbox },
    email: FetchedEmail,
  ) {
    const { inbox } = route;
    const orgId = inbox.orgId;
    const known = await emailMessagesRepo.threadOf(db, orgId, [
      ...(email.inReplyTo ? [email.inReplyTo] : []),
      ...email.references,
    ]);
    const claimed = await deps.replyHook?.claim(db, {
      orgId,
      ids: [...(email.inReplyTo ? [email.inReplyTo] : []), ...email.references.toReversed()],
    });
    const decision = claimed ? { refusal: claimed.detail, responder: undefined } : await answererOf(route, known, email);
    const [actionId, deliveryId] = [randomUUID(), randomUUID()];
    const message = receivedMessageRow(
      { id: randomUUID(), threadId: known ?? randomUUID() },
      inbox,
      payload.data.email_id,
      email,
      // Written at receipt: the action may yet wait for a person, fail or be rejected (its own status says).
      decision.refusal ?? `given to ${decision.responder.agentName} to answer (action ${actionId})`,
    );
    const action =
      decision.responder && (await answeringAction(notification, inbox, email, decision.responder, { actionId, known, message }));
    const parts: ReceivedEmailParts = {
      message,
      thread: known ? 'existing' : { newTitle: (email.subject || '(no subject)').slice(0, 200) },
      attachments: email.attachments.map((attachment, position) => ({ id: randomUUID(), position, ...attachment })),
      ledger: {
        id: deliveryId,
        reason: decision.refusal ?? null,
        payload: JSON.stringify(payload),
        headers: JSON.stringify(notification.headers),
      },
      action,
      notification: { id: notification.id, reason: decision.refusal ?? null },
    };
    if (claimed) {
      await transaction(db, async (trx) => {
        await storeReceived(trx, parts);
        await claimed.take(trx, message.id);
      });
    } else await storeReceived(db, parts);
    if (action) deps.wakeRunners();
  }

  return {
    async receive(
      notification: EmailNotificationRow,
      payload: MailNotification,
      options: { lastAttempt: boolean },
    ): Promise<void> {
      const orgId = notification.orgId!;
      const route = await routes.write({
        orgId,
        recipients: recipientsOf(payload.data),
        providerEmailId: payload.data.email_id,
        from: addressOf(payload.data.from) ?? '',
      });
      if (!route)
        return void (await notificationsRepo.settle(db, notification.id, {
          status: 'ignored',
          reason: 'the email integration was removed',
        }));
      const { inbox } = route;
      if (!inbox)
        return void (await notificationsRepo.settle(db, notification.id, {
          status: 'ignored',
          reason: 'no inbox for any recipient of the email',
        }));
      if (route.stored) {
        return void (await notificationsRepo.settle(db, notification.id, {
          status: 'processed',
          reason: 'the email was stored already',
        }));
      }
      const api = deps.mail(deps.box.decrypt(route.apiKeyEncrypted));
      const email = await fetchReceivedEmail(api, payload.data.email_id, deps.limits, options.lastAttempt);
      try {
        await store(notification, payload, { ...route, inbox }, email);
      } catch (error) {
        // Another worker stored the same email meanwhile (its lease lapsed while this one worked).
        if (!isUniqueViolation(error, 'email_messages_provider_email')) throw error;
        await notificationsRepo.settle(db, notification.id, { status: 'processed', reason: 'the email was stored already' });
      }
    },
  };
}

export type InboundEmail = ReturnType<typeof createInboundEmail>;
