import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { AppError } from '../../lib/errors.ts';
import type { ApprovalsService } from '../actions/approvals.service.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import { addressOf, mailbox, newMessageId, referencesAfter, replySubject } from '../email/email-content.ts';
import { emailIntegrationRepo } from '../email/email-integration.repo.ts';
import { emailMessagesRepo } from '../email/email-messages.repo.ts';
import { autoReplyRefusal } from '../email/loop-guards.ts';
import { MailProviderError } from '../email/mail-client.ts';
import type { OutboundMail } from '../email/outbound-mail.ts';
import { outboundRepo } from '../email/outbound.repo.ts';
import { usersRepo } from '../users/users.repo.ts';
import { approvalMailRepo } from './approval-mail.repo.ts';
import { authenticationFailure, readReplyDecision } from './reply-reading.ts';

/** What a reply to an approval email is while its job has not read it (the inbound path stores it so). */
export const REPLY_WAITING = 'an answer to an approval email: to be read as a decision';

/**
 * Replies to approval emails. The inbound path stores a reply as any email, and hands it here when it
 * answers one of our approval emails (claim); the `approvals.reply` job then reads it. It decides
 * every call that email listed, as the approver it was sent to, only when it comes from that
 * approver's address, did not fail the provider's authentication checks and starts with approve or
 * reject. Anything else decides nothing, is on each call's record, and gets one short answer
 * (an automatic message gets none: the loop guards).
 */
export function createApprovalReplies(deps: {
  db: Kysely<DB>;
  jobs: Pick<JobRunner, 'enqueue'>;
  deliver: OutboundMail;
  approvals: Pick<ApprovalsService, 'decideWith'>;
}) {
  const { db } = deps;

  type Message = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.reply>>>;

  /** One short answer in the thread, from the approval address, marked as automatic (RFC 3834). */
  async function answer(message: Message, to: string, text: string): Promise<void> {
    const integration = await emailIntegrationRepo.find(db, message.orgId);
    if (!integration) return;
    if ((await outboundRepo.suppressedAmong(db, message.orgId, [to])).length > 0) return;
    const row = await db.transaction().execute(async (trx) => {
      const stored = await emailMessagesRepo.insertMessage(trx, {
        id: randomUUID(),
        orgId: message.orgId,
        threadId: message.threadId,
        inboxId: message.inboxId,
        direction: 'outbound',
        messageId: newMessageId(integration.fromEmail),
        inReplyTo: message.messageId,
        referenceIds: JSON.stringify(referencesAfter(message)),
        fromAddress: mailbox(integration.fromEmail, integration.fromName),
        toAddresses: JSON.stringify([to]),
        subject: replySubject(message.subject || 'Approval'),
        textBody: text,
        status: 'sending',
      });
      await emailMessagesRepo.touchThread(trx, message.threadId);
      return stored;
    });
    try {
      await deps.deliver(integration, row, `approval-answer/${message.id}`, { headers: { 'Auto-Submitted': 'auto-replied' } });
    } catch (error) {
      if (!(error instanceof MailProviderError)) throw error;
    }
  }

  async function refuseAll(orgId: string, calls: Array<{ id: string }>, reason: string, userId: string | null) {
    for (const call of calls)
      await toolCallsRepo.recordAttempt(db, {
        id: randomUUID(),
        orgId,
        toolCallId: call.id,
        channel: 'email_reply',
        userId,
        reason,
      });
  }

  /** Reads the reply; what became of it, as the message's status shows it. */
  async function read(message: Message): Promise<string> {
    const target = await approvalMailRepo.repliedTo(db, message.orgId, message.ids);
    if (!target?.userId) return 'not read as a decision: the approval email it answers has no approver any more';
    const approver = await usersRepo.findById(db, target.userId);
    const sender = addressOf(message.fromAddress) ?? '';
    const automatic = autoReplyRefusal({
      headers: message.headers,
      from: sender,
      fromOwnAddress: await emailMessagesRepo.isOwnAddress(db, sender),
    });
    if (automatic) {
      await refuseAll(message.orgId, target.calls, `An automatic reply decides nothing (${automatic})`, null);
      return `not read as a decision: ${automatic}; not answered`;
    }
    if (!approver || sender !== approver.email.toLowerCase()) {
      await refuseAll(message.orgId, target.calls, `A reply from ${sender || 'an unknown sender'}, not from the approver's address`, null);
      await answer(
        message,
        sender,
        'Only the person this approval email was sent to can decide by replying to it, from their own address. Nothing was decided.',
      );
      return `not read as a decision: sent from ${sender}, not from the approver's address`;
    }
    const failure = authenticationFailure(message.authentication, message.headers);
    if (failure) {
      await refuseAll(message.orgId, target.calls, `A reply that failed authentication (${failure})`, approver.id);
      await answer(
        message,
        sender,
        `Your reply decided nothing: the mail provider could not confirm it came from you (${failure}). Use a link of the approval email, or the console.`,
      );
      return `not read as a decision: ${failure}`;
    }
    const decision = readReplyDecision(message.textBody);
    if (decision.kind === 'unclear') {
      await refuseAll(
        message.orgId,
        target.calls,
        `A reply that starts with neither approve nor reject ("${decision.firstLine.slice(0, 80)}")`,
        approver.id,
      );
      await answer(
        message,
        sender,
        'Your reply decided nothing: its first line must start with "approve", or "reject" followed by a reason if you like.',
      );
      return 'not read as a decision: its first line starts with neither approve nor reject';
    }
    const decided: string[] = [];
    const refused: string[] = [];
    for (const call of target.calls) {
      // A retried job finds what this reply decided already: nothing to say of it.
      if (call.decisionChannel === 'email_reply' && call.decidedByUserId === approver.id) continue;
      try {
        await deps.approvals.decideWith(
          { orgId: message.orgId, actionId: target.actionId, toolCallId: call.toolCallId },
          { userId: approver.id, channel: 'email_reply' },
          decision,
          async (trx) =>
            (await approvalMailRepo.mayDecide(trx, message.orgId, target.actionId, approver.id))
              ? undefined
              : 'The approver may no longer decide this call (no longer a member with the role the rule asks for)',
        );
        decided.push(`${call.toolName} ${decision.kind === 'approve' ? 'approved' : 'rejected'}`);
      } catch (error) {
        if (!(error instanceof AppError && (error.code === 'already_decided' || error.code === 'not_found'))) throw error;
        refused.push(`${call.toolName}: ${error.message}`);
      }
    }
    if (refused.length > 0) await answer(message, sender, `Your reply did not decide everything: ${refused.join('; ')}.`);
    return `read as a decision: ${[...decided, ...refused].join('; ') || 'nothing left to decide'}`;
  }

  return {
    /** The inbound path's claim: a message answering one of our approval emails is read by the reply job. */
    async claim(trx: Kysely<DB>, message: { orgId: string; messageRowId: string; ids: string[] }): Promise<string | undefined> {
      if (!(await approvalMailRepo.repliedTo(trx, message.orgId, message.ids))) return undefined;
      await deps.jobs.enqueue('approvals.reply', { messageRowId: message.messageRowId }, { trx });
      return REPLY_WAITING;
    },

    async handle(messageRowId: string): Promise<void> {
      const message = await approvalMailRepo.reply(db, messageRowId);
      if (message?.statusDetail !== REPLY_WAITING) return;
      await emailMessagesRepo.setStatusDetail(db, message.id, (await read(message)).slice(0, 2000));
    },
  };
}

export type ApprovalReplies = ReturnType<typeof createApprovalReplies>;
