import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { EmailIntegrationRow } from '../../../db/email-schema.ts';
import type { DB } from '../../../db/schema.ts';
import { sha256Hex } from '../../../lib/crypto.ts';
import type { Metrics } from '../../../lib/metrics.ts';
import { BUDGET_APPROVAL } from '../../actions/budget-hold.ts';
import { isSendToRetry, type SendOutcome, type ThreadMail } from '../../email/thread-mail.ts';
import { type Approver, approvalMailRepo } from './approval-mail.repo.ts';
import { approvalSubject, redactLinks, renderApprovalEmail } from './approval-email.ts';
import { whyItWaits } from '../why-it-waits.ts';

/** A link's token: 256 random bits, base64url. Only its SHA-256 is stored. */
export const newLinkToken = () => randomBytes(32).toString('base64url');
export const hashLinkToken = sha256Hex;

const NO_CALL_WAITS = 'none of its calls waits any longer';

/**
 * `approvals.notify`: when an action starts to wait and its rule notifies by email, each approver gets
 * one email of every call waiting for them, in the action's approval thread, with one-time links.
 * An approver who was told of a call is not told again; one who could not be is on the record with
 * the reason. The approval thread's address is the integration's From Email, which gets an inbox
 * (without agents) if it has none, so that replies come back through the inbound path.
 */
export function createApprovalNotifier(deps: {
  db: Kysely<DB>;
  mail: Pick<ThreadMail, 'send' | 'resume' | 'abandon' | 'integrationOf' | 'suppression' | 'ensureInbox'>;
  /** Where links and the console are: the API's and the console's origins. */
  apiHost: string;
  appHost: string;
  metrics: Pick<Metrics, 'approvalNotifications'>;
}) {
  const { db } = deps;

  /** Why an approver cannot be emailed, if they cannot. */
  async function refusal(approver: Approver, integration: EmailIntegrationRow | undefined, orgId: string) {
    if (!approver.approvalEmails) return 'the approver turned approval emails off';
    if (!integration) return 'the organization has no email integration';
    return deps.mail.suppression(orgId, approver.email);
  }

  type Action = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.actionToNotify>>>;
  type StagedCall = Awaited<ReturnType<typeof approvalMailRepo.stagedCalls>>[number];

  type Links = Array<{ call: StagedCall; approve: string; reject: string }>;
  /** An attempt's sends of an action's emails: `retryTransient` unless it is the job's last attempt. */
  type Sending = { action: Action; integration: EmailIntegrationRow; retryTransient: boolean };
  /** The same, for every approver: the integration when there is one, and the calls that wait. */
  type Round = Omit<Sending, 'integration'> & { integration: EmailIntegrationRow | undefined; calls: StagedCall[] };
  type Told = Awaited<ReturnType<typeof approvalMailRepo.notificationsOf>>;

  const idempotencyKey = (row: { id: string }) => `approval/${row.id}`;

  /** The approver's notification of each call, as it stands. */
  const notificationRows = (
    action: Action,
    approver: Approver,
    calls: StagedCall[],
    state: { status: 'sending' | 'not_sent'; reason: string | null; emailMessageId: string | null },
  ) =>
    calls.map((call) => ({
      id: randomUUID(),
      orgId: action.orgId,
      actionId: action.id,
      toolCallId: call.id,
      userId: approver.id,
      address: approver.email,
      ...state,
    }));

  /** With the email: who was told of which call (sending until the provider confirms), and the links' hashes. */
  async function recordNotifications(
    trx: Kysely<DB>,
    emailMessageId: string,
    { action, approver, links }: { action: Action; approver: Approver; links: Links },
  ): Promise<void> {
    const notifications = await approvalMailRepo.upsertNotifications(
      trx,
      notificationRows(
        action,
        approver,
        links.map(({ call }) => call),
        { status: 'sending', reason: null, emailMessageId },
      ),
    );
    await approvalMailRepo.insertLinks(
      trx,
      links.flatMap(({ call, approve, reject }) => {
        const notificationId = notifications.find((notification) => notification.toolCallId === call.id)!.id;
        const base = {
          orgId: action.orgId,
          toolCallId: call.id,
          userId: approver.id,
          notificationId,
          expiresAt: call.expiresAt!,
        };
        return [
          { ...base, id: randomUUID(), decision: 'approve' as const, tokenHash: hashLinkToken(approve) },
          { ...base, id: randomUUID(), decision: 'reject' as const, tokenHash: hashLinkToken(reject) },
        ];
      }),
    );
  }

  async function send({ action, integration, retryTransient }: Sending, approver: Approver, calls: StagedCall[]) {
    const links: Links = calls.map((call) => ({ call, approve: newLinkToken(), reject: newLinkToken() }));
    const url = (token: string) => `${deps.apiHost}/approvals/decide/${token}`;
    const rendered = renderApprovalEmail({
      agentName: action.agentName ?? 'An agent',
      ruleName: action.ruleName,
      minApprovals: action.minApprovals ?? 1,
      eventType: action.eventType,
      externalId: action.externalId,
      email: action.email,
      actionId: action.id,
      approverName: approver.name,
      consoleUrl: `${deps.appHost}/o/${encodeURIComponent(action.orgSlug)}/approvals`,
      calls: links.map(({ call, approve, reject }) => ({
        toolName: call.toolName,
        input: call.input,
        why: whyItWaits(call),
        expiresAt: call.expiresAt,
        approveUrl: url(approve),
        rejectUrl: url(reject),
        canSendBack: call.toolName !== BUDGET_APPROVAL,
      })),
    });
    const urls = links.flatMap(({ approve, reject }) => [url(approve), url(reject)]);
    const thread = await approvalMailRepo.threadOf(db, action.id, approver.id);
    const previous = thread.last;
    const subject = approvalSubject({ agentName: action.agentName ?? 'An agent', eventType: action.eventType });
    const outcome = await deps.mail.send(
      integration,
      {
        orgId: action.orgId,
        thread: thread.threadId ? { id: thread.threadId } : { newTitle: subject },
        answers: previous && {
          messageId: previous.providerMessageId ?? previous.messageId,
          referenceIds: previous.referenceIds,
          subject: previous.subject,
        },
        from: { address: integration.fromEmail, name: integration.fromName },
        to: [approver.email],
        subject,
        // Stored without its links: whoever reads the thread in the console must not be able to use them.
        text: redactLinks(rendered.text, urls),
        html: redactLinks(rendered.html, urls),
        actionId: action.id,
      },
      {
        idempotencyKey,
        // The links are stored only as hashes: the email is kept sealed until sent, to be resent as it was.
        resumable: true,
        retryTransient,
        extras: {
          text: rendered.text,
          html: rendered.html,
          // RFC 3834: an automatic message; auto-responders must not answer it.
          headers: { 'Auto-Submitted': 'auto-generated', 'X-Auto-Response-Suppress': 'All' },
          replyTo: [integration.fromEmail],
        },
        alongside: (trx, row) => recordNotifications(trx, row.id, { action, approver, links }),
      },
    );
    await settle(outcome, calls.length);
  }

  /** The notifications of an email as its send ended. */
  async function settle(outcome: SendOutcome, notifications: number) {
    const outcomeName = outcome.sent ? 'sent' : 'failed';
    const reason = outcome.sent ? null : `The provider refused it: ${outcome.refusal}`.slice(0, 1000);
    await approvalMailRepo.settleNotifications(db, outcome.message.id, outcomeName, reason);
    deps.metrics.approvalNotifications.inc({ channel: 'email', outcome: outcomeName }, notifications);
  }

  /**
   * Sends again, as it was, each email to the approver whose send was cut off (its notifications still
   * `sending`): its links, and the idempotency key that has the provider send it once. Returns the emails
   * ended so; one that cannot be (ThreadMail.resume says when) is not among them, and its calls are due.
   */
  async function resumeCutOff({ action, integration, retryTransient }: Sending, told: Told): Promise<Set<string>> {
    const resumed = new Set<string>();
    for (const [emailMessageId, notifications] of cutOffOf(told)) {
      const outcome = await deps.mail.resume(integration, action.orgId, emailMessageId, idempotencyKey, retryTransient);
      if (!outcome) continue;
      await settle(outcome, notifications);
      resumed.add(emailMessageId);
    }
    return resumed;
  }

  /** The approver's emails whose send was cut off (their notifications still `sending`), with how many calls each told of. */
  function cutOffOf(told: Told): Map<string, number> {
    const cutOff = new Map<string, number>();
    for (const row of told) {
      if (row.status === 'sending' && row.emailMessageId)
        cutOff.set(row.emailMessageId, (cutOff.get(row.emailMessageId) ?? 0) + 1);
    }
    return cutOff;
  }

  /** An email cut off mid-send that is not to be sent after all: its message failed, saying why. */
  const notSentAgain = (orgId: string, emailMessageId: string, why: string) =>
    deps.mail.abandon(orgId, emailMessageId, `Not sent again after it was cut off: ${why}`);

  /**
   * A cut-off email none of whose calls still waits (decided on another channel, expired, or its action
   * ended meanwhile) is not sent again: asking about them would only be noise. It is marked failed and its
   * sealed links dropped, its notifications `not_sent` with why. Returns the notifications of the others.
   */
  async function dropMoot(orgId: string, told: Told, waiting: StagedCall[]): Promise<Told> {
    const waits = new Set(waiting.map((call) => call.id));
    const moot = new Set<string>();
    for (const [emailMessageId, notifications] of cutOffOf(told)) {
      if (told.some((row) => row.emailMessageId === emailMessageId && waits.has(row.toolCallId))) continue;
      await notSentAgain(orgId, emailMessageId, NO_CALL_WAITS);
      await approvalMailRepo.settleNotifications(db, emailMessageId, 'not_sent', NO_CALL_WAITS);
      deps.metrics.approvalNotifications.inc({ channel: 'email', outcome: 'not_sent' }, notifications);
      moot.add(emailMessageId);
    }
    return told.filter((row) => !row.emailMessageId || !moot.has(row.emailMessageId));
  }

  /**
   * Tells one approver of the calls they were not told of yet: the emails a send cut off sent again,
   * then one new email; or, where they cannot be emailed, the record of why not.
   */
  async function tell(round: Round, approver: Approver, toldThem: Told) {
    const { action, integration, calls, retryTransient } = round;
    const untold = (rows: Told) => calls.filter((call) => !rows.some((row) => row.toolCallId === call.id));
    // A notification still `sending` was cut off: its email may or may not have gone out.
    const settled = toldThem.filter((row) => row.status !== 'sending');
    if (untold(settled).length === 0) return;
    const reason = await refusal(approver, integration, action.orgId);
    if (reason || !integration) {
      const why = reason ?? 'the organization has no email integration';
      for (const emailMessageId of cutOffOf(toldThem).keys()) await notSentAgain(action.orgId, emailMessageId, why);
      const due = untold(settled);
      await approvalMailRepo.upsertNotifications(
        db,
        notificationRows(action, approver, due, { status: 'not_sent', reason: why, emailMessageId: null }),
      );
      deps.metrics.approvalNotifications.inc({ channel: 'email', outcome: 'not_sent' }, due.length);
      return;
    }
    const sending: Sending = { action, integration, retryTransient };
    const resumed = await resumeCutOff(sending, toldThem);
    const due = untold(toldThem.filter((row) => row.status !== 'sending' || resumed.has(row.emailMessageId!)));
    if (due.length > 0) await send(sending, approver, due);
  }

  return {
    /**
     * Stops before the next approver's email once `signal` aborts (the job's attempt lost its claim: its
     * retry goes on). A send the provider may take on another try (unreachable, busy) leaves its email
     * `sending`, the others are sent, and then it throws: the job's retry sends that email again as it
     * was. On the `lastAttempt`, such a send ends failed.
     */
    async notify(actionId: string, options: { signal: AbortSignal; lastAttempt: boolean }): Promise<void> {
      const action = await approvalMailRepo.actionToNotify(db, actionId);
      if (!action?.notify.includes('email')) return;
      const calls =
        action.status === 'pending_approval'
          ? (await approvalMailRepo.stagedCalls(db, actionId)).filter((call) => call.expiresAt)
          : [];
      // A retried job may find an email its first run was cut off sending, about calls that no longer wait.
      const told = await dropMoot(action.orgId, await approvalMailRepo.notificationsOf(db, actionId, 'email'), calls);
      if (calls.length === 0) return;
      const approvers = await approvalMailRepo.approvers(db, action.orgId, action.approvers ?? null);
      const integration = await deps.mail.integrationOf(action.orgId);
      // Replies come back to the integration's From Email: it must be an inbox for the inbound path to take them.
      if (integration) await deps.mail.ensureInbox(action.orgId, integration.fromEmail, 'Approvals');
      const round: Round = { action, integration, calls, retryTransient: !options.lastAttempt };
      let tryAgain: Error | undefined;
      for (const approver of approvers) {
        options.signal.throwIfAborted();
        try {
          await tell(
            round,
            approver,
            told.filter((row) => row.userId === approver.id),
          );
        } catch (error) {
          if (!isSendToRetry(error)) throw error;
          tryAgain ??= error;
        }
      }
      if (tryAgain) throw tryAgain;
    },
  };
}

export type ApprovalNotifier = ReturnType<typeof createApprovalNotifier>;
