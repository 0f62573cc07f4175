import { hash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { EmailMessageRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Clock } from '../../lib/clock.ts';
import { pdfFileName } from '../../lib/download-filename.ts';
import type { OutgoingEmail } from './mail-client.ts';
import { outboundRepo } from './outbound.repo.ts';
import type { ThreadMail } from './thread-mail.ts';

/** The provider keeps an idempotency key 24 h and takes at most 256 characters: the call's own id, per action. */
export function idempotencyKeyOf(call: { actionId: string; toolCallId: string }): string {
  const key = `${call.actionId}/${call.toolCallId}`;
  return key.length <= 256 ? key : `${call.actionId}/${hash('sha256', call.toolCallId, 'base64url')}`;
}

/** The PDFs of generated documents as the provider takes attachments. */
export const attachmentsOf = (documents: Array<{ title: string; pdf: Uint8Array }>): OutgoingEmail['attachments'] =>
  documents.map((document) => ({
    filename: pdfFileName(document.title),
    content: Buffer.from(document.pdf).toString('base64'),
    content_type: 'application/pdf',
  }));

/** The first try of the job comes after the client's own retries have failed for a few seconds. */
const FIRST_TRY_AFTER_MS = 5000;

const ABANDONED_DETAIL = 'Not sent: the provider never confirmed it, and nothing was left to send it again';

/**
 * A sendEmail message unchanged this long while `sending`, with no job to send it, is given up: its
 * job's tries span some 20 minutes, and a run cut off mid-send is resumed (and sends it) within minutes.
 */
const ABANDONED_AFTER_MS = 60 * 60 * 1000;
/** Given up at most this many at a time (the job comes back in ten minutes). */
const ABANDONED_BATCH = 500;

/**
 * A sendEmail message the provider did not take at once (unreachable, a timeout, 429 or 5xx after the
 * client's retries: MailProviderError.transient) stays `sending` and is sent again by the job
 * `email.send-again`, as it was, with its attachments and the call's idempotency key: a timed-out send
 * that reached the provider is not sent twice. The last attempt that fails ends it `failed`, with why.
 */
export function createSendEmailAgain(deps: {
  db: Kysely<DB>;
  threadMail: Pick<ThreadMail, 'deliver' | 'integrationOf' | 'abandon'>;
  jobs: Pick<JobRunner, 'enqueue' | 'unfinished'>;
  clock: Clock;
  logger: Pick<Logger, 'error' | 'warn'>;
}) {
  const { db } = deps;
  return {
    /**
     * Notes on the message why it is still `sending`, and has the job send it again. Where the job
     * cannot be queued, nothing would send it: it ends `failed` now, and the error says it may have gone
     * (the provider's `email.sent` notification still settles it as sent if that send did).
     */
    async schedule(message: EmailMessageRow, why: string): Promise<void> {
      try {
        await db.transaction().execute(async (trx) => {
          await outboundRepo.noteStillSending(
            trx,
            message.id,
            `The provider did not take it at once (${why}); it is sent again, with the same idempotency key`,
          );
          await deps.jobs.enqueue(
            'email.send-again',
            { messageRowId: message.id },
            { trx, startAfter: new Date(deps.clock.now().getTime() + FIRST_TRY_AFTER_MS) },
          );
        });
      } catch (error) {
        const log = (err: unknown, what: string) => deps.logger.error({ err, messageRowId: message.id }, what);
        log(error, 'an email to send again could not be queued');
        const detail = `Not sent: the provider did not take it at once (${why}), and it could not be queued to be sent again`;
        // The model is told so either way; the database's own words are for the log.
        await deps.threadMail
          .abandon(message.orgId, message.id, detail)
          .catch((cause) => log(cause, 'an email that could not be queued to send again could not be marked failed either'));
        throw new Error(`${detail}; the provider may have received it`);
      }
    },

    /**
     * Ends failed the sendEmail messages that nothing is left to send: `sending` and unchanged for an
     * hour, with no `email.send-again` job to run (it could not be queued, and marking the message
     * failed then failed too; or its last attempt died with its worker). The provider's `email.sent`
     * notification still shows one that did reach it as sent. Returns how many.
     */
    async settleAbandoned(): Promise<number> {
      const quietSince = new Date(deps.clock.now().getTime() - ABANDONED_AFTER_MS);
      let settled = 0;
      for (const message of await outboundRepo.quietSendingCalls(db, quietSince, ABANDONED_BATCH)) {
        if (await deps.jobs.unfinished('email.send-again', { messageRowId: message.id })) continue;
        if (await outboundRepo.abandon(db, message.orgId, message.id, ABANDONED_DETAIL, quietSince)) settled++;
      }
      if (settled > 0) deps.logger.warn({ count: settled }, 'sendEmail messages that nothing was left to send ended failed');
      return settled;
    },

    /** The job: sends the message again unless it is sent (or failed) meanwhile; a failure worth another try is thrown. */
    async sendAgain(messageRowId: string, { lastAttempt }: { lastAttempt: boolean }): Promise<void> {
      const message = await outboundRepo.unsentOfToolCall(db, messageRowId);
      if (!message) return;
      const integration = await deps.threadMail.integrationOf(message.orgId);
      if (!integration) {
        await deps.threadMail.abandon(message.orgId, message.id, 'Not sent: the email integration was removed meanwhile');
        return;
      }
      const documents = await outboundRepo.attachedDocuments(db, message.orgId, message.id);
      const key = idempotencyKeyOf({ actionId: message.actionId!, toolCallId: message.toolCallId! });
      // A refusal marks it failed (in deliver); on the last attempt, so does a failure worth another try.
      await deps.threadMail.deliver(integration, message, key, { attachments: attachmentsOf(documents) }, !lastAttempt);
    },
  };
}

export type SendEmailAgain = ReturnType<typeof createSendEmailAgain>;
