import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { EmailIntegrationRow } from '../../db/email-schema.ts';
import type { DB, ModeSource } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { mailbox, newMessageId, referencesAfter, replySubject } from '../email/email-content.ts';
import { emailIntegrationRepo } from '../email/email-integration.repo.ts';
import { emailMessagesRepo } from '../email/email-messages.repo.ts';
import { inboxesRepo } from '../email/inboxes.repo.ts';
import { MailProviderError } from '../email/mail-client.ts';
import type { OutboundMail } from '../email/outbound-mail.ts';
import { outboundRepo } from '../email/outbound.repo.ts';
import { type Approver, approvalMailRepo } from './approval-mail.repo.ts';
import { approvalSubject, redactLinks, renderApprovalEmail } from './approval-email.ts';

/** A link's token: 256 random bits, base64url. Only its SHA-256 is stored. */
export const newLinkToken = () => randomBytes(32).toString('base64url');
export const hashLinkToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** Why a call waits, as the approver reads it. */
function whyItWaits(call: { mode: string; modeSource: ModeSource | null; stagedReason: string | null }): string {
  if (call.stagedReason) return call.stagedReason;
  const source = call.modeSource;
  if (source?.source === 'argument_rule') {
    const { rule } = source;
    return `argument rule ${source.index + 1}: ${rule.path} ${rule.op}${rule.value === undefined ? '' : ` ${JSON.stringify(rule.value)}`}`;
  }
  if (call.mode === 'agent') return 'the agent asked for approval';
  return source?.source === 'default'
    ? 'the rule does not list this tool (ask by default)'
    : `the rule's mode for this tool is ${call.mode}`;
}

/**
 * `approvals.notify`: when an action starts to wait and its rule notifies by email, each approver gets
 * one email of every call waiting for them, in the action's approval thread, with one-time links.
 * An approver who was told of a call is not told again; one who could not be is on the record with
 * the reason. The approval thread's address is the integration's From Email, which gets an inbox
 * (without agents) if it has none, so that replies come back through the inbound path.
 */
export function createApprovalNotifier(deps: {
  db: Kysely<DB>;
  deliver: OutboundMail;
  /** Where links and the console are: the API's and the console's origins. */
  apiHost: string;
  appHost: string;
  metrics: Pick<Metrics, 'approvalNotifications'>;
  logger: Logger;
}) {
  const { db } = deps;

  /** The inbox that receives the replies (the integration's From Email), made if it is missing. */
  async function ensureReplyInbox(integration: EmailIntegrationRow): Promise<void> {
    const address = integration.fromEmail.toLowerCase();
    if ((await emailMessagesRepo.inboxesAt(db, integration.orgId, [address])).length > 0) return;
    try {
      await inboxesRepo.insert(db, { id: randomUUID(), orgId: integration.orgId, emailAddress: address, displayName: 'Approvals' });
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      deps.logger.warn({ orgId: integration.orgId }, 'the approval reply inbox exists already (made meanwhile, or by another org)');
    }
  }

  /** Why an approver cannot be emailed, if they cannot. */
  async function refusal(approver: Approver, integration: EmailIntegrationRow | undefined, orgId: string) {
    if (!approver.approvalEmails) return 'the approver turned approval emails off';
    if (!integration) return 'the organization has no email integration';
    const [suppressed] = await outboundRepo.suppressedAmong(db, orgId, [approver.email.toLowerCase()]);
    if (suppressed) return `${approver.email} is on the suppression list (${suppressed.reason})`;
    return undefined;
  }

  type Action = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.actionToNotify>>>;
  type StagedCall = Awaited<ReturnType<typeof approvalMailRepo.stagedCalls>>[number];

  async function send(action: Action, approver: Approver, calls: StagedCall[], integration: EmailIntegrationRow) {
    const links = calls.map((call) => ({ call, approve: newLinkToken(), reject: newLinkToken() }));
    const url = (token: string) => `${deps.apiHost}/approvals/decide/${token}`;
    const rendered = renderApprovalEmail({
      agentName: action.agentName ?? 'An agent',
      ruleName: action.ruleName,
      eventType: action.eventType,
      externalId: action.externalId,
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
      })),
    });
    const urls = links.flatMap(({ approve, reject }) => [url(approve), url(reject)]);
    const message = await db.transaction().execute(async (trx) => {
      const thread = await approvalMailRepo.threadOf(trx, action.id, approver.id);
      const threadId = thread.threadId ?? randomUUID();
      const subject = approvalSubject({ agentName: action.agentName ?? 'An agent', eventType: action.eventType });
      if (!thread.threadId) await emailMessagesRepo.insertThread(trx, { id: threadId, orgId: action.orgId, title: subject });
      const previous = thread.last;
      const previousId = previous ? (previous.providerMessageId ?? previous.messageId) : null;
      // Stored without its links: whoever reads the thread in the console must not be able to use them.
      const row = await emailMessagesRepo.insertMessage(trx, {
        id: randomUUID(),
        orgId: action.orgId,
        threadId,
        inboxId: null,
        direction: 'outbound',
        messageId: newMessageId(integration.fromEmail),
        inReplyTo: previousId,
        referenceIds: JSON.stringify(previous ? referencesAfter({ messageId: previousId, referenceIds: previous.referenceIds }) : []),
        fromAddress: mailbox(integration.fromEmail, integration.fromName),
        toAddresses: JSON.stringify([approver.email]),
        subject: previous ? replySubject(previous.subject) : subject,
        textBody: redactLinks(rendered.text, urls),
        htmlBody: redactLinks(rendered.html, urls),
        status: 'sending',
        actionId: action.id,
      });
      await emailMessagesRepo.touchThread(trx, threadId);
      const notifications = await approvalMailRepo.upsertNotifications(
        trx,
        calls.map((call) => ({
          id: randomUUID(),
          orgId: action.orgId,
          actionId: action.id,
          toolCallId: call.id,
          userId: approver.id,
          address: approver.email,
          status: 'sending',
          reason: null,
          emailMessageId: row.id,
        })),
      );
      await approvalMailRepo.insertLinks(
        trx,
        links.flatMap(({ call, approve, reject }) => {
          const notificationId = notifications.find((row) => row.toolCallId === call.id)!.id;
          const base = { orgId: action.orgId, toolCallId: call.id, userId: approver.id, notificationId, expiresAt: call.expiresAt! };
          return [
            { ...base, id: randomUUID(), decision: 'approve' as const, tokenHash: hashLinkToken(approve) },
            { ...base, id: randomUUID(), decision: 'reject' as const, tokenHash: hashLinkToken(reject) },
          ];
        }),
      );
      return row;
    });
    try {
      await deps.deliver(integration, message, `approval/${message.id}`, {
        text: rendered.text,
        html: rendered.html,
        // RFC 3834: an automatic message; auto-responders must not answer it.
        headers: { 'Auto-Submitted': 'auto-generated', 'X-Auto-Response-Suppress': 'All' },
        replyTo: [integration.fromEmail],
      });
    } catch (error) {
      if (!(error instanceof MailProviderError)) throw error;
      await approvalMailRepo.settleNotifications(db, message.id, 'failed', `The provider refused it: ${error.message}`.slice(0, 1000));
      deps.metrics.approvalNotifications.inc({ channel: 'email', outcome: 'failed' }, calls.length);
      return;
    }
    await approvalMailRepo.settleNotifications(db, message.id, 'sent', null);
    deps.metrics.approvalNotifications.inc({ channel: 'email', outcome: 'sent' }, calls.length);
  }

  return {
    async notify(actionId: string): Promise<void> {
      const action = await approvalMailRepo.actionToNotify(db, actionId);
      if (!action?.notify.includes('email') || action.status !== 'pending_approval') return;
      const calls = (await approvalMailRepo.stagedCalls(db, actionId)).filter((call) => call.expiresAt);
      if (calls.length === 0) return;
      const approvers = await approvalMailRepo.approvers(db, action.orgId, action.approvers ?? null);
      const integration = await emailIntegrationRepo.find(db, action.orgId);
      if (integration) await ensureReplyInbox(integration);
      const told = await approvalMailRepo.notificationsOf(db, actionId, 'email');
      for (const approver of approvers) {
        // A notification still `sending` was interrupted (its send may or may not have gone out): sent again, with new links.
        const due = calls.filter(
          (call) => !told.some((row) => row.toolCallId === call.id && row.userId === approver.id && row.status !== 'sending'),
        );
        if (due.length === 0) continue;
        const reason = await refusal(approver, integration, action.orgId);
        if (reason || !integration) {
          await approvalMailRepo.upsertNotifications(
            db,
            due.map((call) => ({
              id: randomUUID(),
              orgId: action.orgId,
              actionId,
              toolCallId: call.id,
              userId: approver.id,
              address: approver.email,
              status: 'not_sent',
              reason: reason ?? 'the organization has no email integration',
              emailMessageId: null,
            })),
          );
          deps.metrics.approvalNotifications.inc({ channel: 'email', outcome: 'not_sent' }, due.length);
          continue;
        }
        await send(action, approver, due, integration);
      }
    },
  };
}

export type ApprovalNotifier = ReturnType<typeof createApprovalNotifier>;
