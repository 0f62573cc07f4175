import type { Kysely } from 'kysely';
import type { DB } from '../../../db/schema.ts';
import type { JobRunner } from '../../../jobs/job-runner.ts';
import { AppError } from '../../../lib/errors.ts';
import type { ApprovalsService } from '../approvals.service.ts';
import { addressOf } from '../../email/email-content.ts';
import type { InboundReplyHook } from '../../email/inbound.service.ts';
import type { ThreadMail } from '../../email/thread-mail.ts';
import { usersRepo } from '../../users/users.repo.ts';
import { approvalMailRepo } from './approval-mail.repo.ts';
import { authenticationFailure, type ReplyDecision, readReplyDecision } from './reply-reading.ts';

/** How a reply's answer says what it decided. */
const DONE = { approve: 'approved', reject: 'rejected', send_back: 'sent back' } as const;
/** What users see of a reply to an approval email until the job has read it (its state is approval_replies'). */
const REPLY_WAITING_DETAIL = 'an answer to an approval email: to be read as a decision';

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
  mail: Pick<ThreadMail, 'send' | 'deliver' | 'integrationOf' | 'suppression' | 'automatic'>;
  approvals: Pick<ApprovalsService, 'decideWith' | 'recordRefusals'>;
}) {
  const { db } = deps;

  type Message = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.waitingReply>>>;

  /**
   * One short answer in the thread, from the approval address, marked as automatic (RFC 3834). With
   * `retryTransient`, a send the provider may take on another try is thrown, the answer left `sending`.
   */
  async function answer(message: Message, to: string, text: string, retryTransient: boolean): Promise<void> {
    const integration = await deps.mail.integrationOf(message.orgId);
    if (!integration || (await deps.mail.suppression(message.orgId, to))) return;
    const idempotencyKey = `approval-answer/${message.id}`;
    const extras = { headers: { 'Auto-Submitted': 'auto-replied' } };
    // A retried job finds the answer its first run stored: sent, refused, or cut off mid-send (sent
    // again as it was, so that the provider's idempotency takes it for the same email).
    const { messageId } = message;
    const stored = messageId ? await approvalMailRepo.answerTo(db, { ...message, messageId }) : undefined;
    if (stored) {
      if (stored.status === 'sending') await deps.mail.deliver(integration, stored, idempotencyKey, extras, retryTransient);
      return;
    }
    // A refusal by the provider is on the answer's own record (failed); the reply's outcome stands.
    await deps.mail.send(
      integration,
      {
        orgId: message.orgId,
        thread: { id: message.threadId },
        answers: message,
        from: { address: integration.fromEmail, name: integration.fromName },
        to: [to],
        subject: 'Approval',
        text,
        inboxId: message.inboxId,
      },
      { idempotencyKey: () => idempotencyKey, extras, retryTransient },
    );
  }

  type Target = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.repliedTo>>>;
  type Approver = NonNullable<Awaited<ReturnType<typeof usersRepo.findById>>>;
  /** Why a reply decides nothing: what goes on each call's record (and as whom), what its sender is told, what it became. */
  interface Refusal {
    record: string;
    userId: string | null;
    answer?: string;
    outcome: string;
  }

  /**
   * The reply's decision, or why it decides nothing: an automatic message, another sender, failed
   * authentication, an unclear first line.
   */
  type Decided = Exclude<ReplyDecision, { kind: 'unclear' }>;
  async function judge(
    message: Message,
    approver: Approver | undefined,
    sender: string,
  ): Promise<{ refusal: Refusal } | { approver: Approver; decision: Decided }> {
    const automatic = await deps.mail.automatic({ headers: message.headers, from: sender });
    if (automatic) {
      const record = `An automatic reply decides nothing (${automatic})`;
      return { refusal: { record, userId: null, outcome: `not read as a decision: ${automatic}; not answered` } };
    }
    if (!approver || sender !== approver.email.toLowerCase()) {
      const refusal: Refusal = {
        record: `A reply from ${sender || 'an unknown sender'}, not from the approver's address`,
        userId: null,
        answer:
          'Only the person this approval email was sent to can decide by replying to it, from their own address. ' +
          'Nothing was decided.',
        outcome: `not read as a decision: sent from ${sender}, not from the approver's address`,
      };
      return { refusal };
    }
    const failure = authenticationFailure(message.authentication, message.headers);
    if (failure) {
      const refusal: Refusal = {
        record: `A reply that failed authentication (${failure})`,
        userId: approver.id,
        answer:
          `Your reply decided nothing: the mail provider could not confirm it came from you (${failure}). ` +
          'Use a link of the approval email, or the console.',
        outcome: `not read as a decision: ${failure}`,
      };
      return { refusal };
    }
    const decision = readReplyDecision(message.textBody);
    if (decision.kind !== 'unclear') return { approver, decision };
    const refusal: Refusal = {
      record: `A reply that starts with neither approve, reject nor send back ("${decision.firstLine.slice(0, 80)}")`,
      userId: approver.id,
      answer:
        'Your reply decided nothing: its first line must start with "approve", "reject" followed by a reason if you ' +
        'like, or "send back:" followed by what the agent should do instead.',
      outcome: 'not read as a decision: its first line starts with neither approve, reject nor send back',
    };
    return { refusal };
  }

  /** Decides every call the approval email listed, as its approver; what it decided, and what it could not. */
  async function decideAll(
    message: Message,
    target: Target,
    approver: Approver,
    decision: Exclude<ReplyDecision, { kind: 'unclear' }>,
  ) {
    const decided: string[] = [];
    const refused: string[] = [];
    for (const call of target.calls) {
      // A retried job finds what this reply decided already: nothing to say of it.
      if (call.decisionChannel === 'email_reply' && call.decidedByUserId === approver.id) continue;
      try {
        const now = await deps.approvals.decideWith(
          { orgId: message.orgId, actionId: target.actionId, toolCallId: call.toolCallId },
          { userId: approver.id, channel: 'email_reply', attemptOf: message.id },
          decision,
        );
        // An approval that is not the last one needed: the call waits for the other approvers.
        const count = now.status === 'staged' ? ` (${now.approvals.length} of ${now.approvalsRequired} approvals)` : '';
        decided.push(`${call.toolName} ${DONE[decision.kind]}${count}`);
      } catch (error) {
        // validation_failed: a decision this call cannot take (a run over its budget is not sent back).
        const refusal = ['already_decided', 'not_an_approver', 'not_found', 'validation_failed'] as const;
        if (!(error instanceof AppError && (refusal as readonly string[]).includes(error.code))) throw error;
        refused.push(`${call.toolName}: ${error.message}`);
        // A late or unauthorised decision is on the call's record already (the approvals feature records those).
        if (error.code === 'validation_failed')
          await deps.approvals.recordRefusals(
            message.orgId,
            [call.id],
            { channel: 'email_reply', userId: approver.id, attemptOf: message.id },
            `A reply that decides what this call cannot take (${error.message})`,
          );
      }
    }
    return { decided, refused };
  }

  /** Reads the reply; what became of it, as the message's status shows it. */
  async function read(message: Message, retryTransient: boolean): Promise<string> {
    const target = await approvalMailRepo.repliedTo(db, message.orgId, message.ids);
    if (!target?.userId) return 'not read as a decision: the approval email it answers has no approver any more';
    const sender = addressOf(message.fromAddress) ?? '';
    const judged = await judge(message, await usersRepo.findById(db, target.userId), sender);
    if ('refusal' in judged) {
      const { refusal } = judged;
      await deps.approvals.recordRefusals(
        message.orgId,
        target.calls.map((call) => call.id),
        { channel: 'email_reply', userId: refusal.userId, attemptOf: message.id },
        refusal.record,
      );
      if (refusal.answer) await answer(message, sender, refusal.answer, retryTransient);
      return refusal.outcome;
    }
    const { decided, refused } = await decideAll(message, target, judged.approver, judged.decision);
    const some = decided.length > 0 ? 'did not decide everything' : 'decided nothing';
    if (refused.length > 0) await answer(message, sender, `Your reply ${some}: ${refused.join('; ')}.`, retryTransient);
    return `read as a decision: ${[...decided, ...refused].join('; ') || 'nothing left to decide'}`;
  }

  return {
    /**
     * Reads a waiting reply once: a retried job after the read committed finds it read. An answer the
     * provider did not take is sent by the job's retry, until its `lastAttempt` ends it failed.
     */
    async handle(messageRowId: string, options: { lastAttempt: boolean }): Promise<void> {
      const message = await approvalMailRepo.waitingReply(db, messageRowId);
      if (!message) return;
      const outcome = (await read(message, !options.lastAttempt)).slice(0, 2000);
      await approvalMailRepo.replyRead(db, message.id, outcome);
    },
  };
}

export type ApprovalReplies = ReturnType<typeof createApprovalReplies>;

/**
 * The inbound path's hook (it is composed before the approvals it decides): a received message that
 * answers one of our approval emails is taken, in the transaction that stores it, for the reply job.
 */
export function createApprovalReplyClaims(deps: { jobs: Pick<JobRunner, 'enqueue'> }): InboundReplyHook {
  return {
    async claim(db, message) {
      if (!(await approvalMailRepo.repliedTo(db, message.orgId, message.ids))) return undefined;
      return {
        detail: REPLY_WAITING_DETAIL,
        async take(trx, messageRowId) {
          await approvalMailRepo.replyWaits(trx, message.orgId, messageRowId);
          await deps.jobs.enqueue('approvals.reply', { messageRowId }, { trx });
        },
      };
    },
  };
}
