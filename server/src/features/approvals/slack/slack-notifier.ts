import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { transaction } from '../../../db/after-commit.ts';
import type { DB } from '../../../db/schema.ts';
import type { JobRunner } from '../../../jobs/job-runner.ts';
import type { Clock } from '../../../lib/clock.ts';
import type { Metrics } from '../../../lib/metrics.ts';
import { createReloadingCache } from '../../../lib/reloading-cache.ts';
import { BUDGET_APPROVAL } from '../../actions/budget-hold.ts';
import { standingApprovers } from '../standing-approvals.ts';
import { approvalMailRepo } from '../email/approval-mail.repo.ts';
import { whyItWaits } from '../why-it-waits.ts';
import { approvalMessage, type SlackCallView } from './slack-blocks.ts';
import { SlackApiError } from './slack-client.ts';
import type { OrgSlack } from './slack-integration.service.ts';
import { slackRepo } from './slack.repo.ts';

type Action = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.actionToNotify>>>;
type MessageCall = Awaited<ReturnType<typeof slackRepo.messageCalls>>[number];

/**
 * `approvals.notify` in Slack: when an action starts to wait and its rule notifies in Slack, one
 * message in the org's channel shows its waiting calls with four buttons each, mentioning the
 * approvers found in the workspace by their email. `approvals.slack-update`: after any decision, on
 * any channel, the message is rebuilt from the record (who decided, how; buttons gone).
 */
export function createSlackNotifier(deps: {
  db: Kysely<DB>;
  clock: Clock;
  slackOf: (orgId: string) => Promise<OrgSlack | undefined>;
  metrics: Pick<Metrics, 'approvalNotifications'>;
  jobs: Pick<JobRunner, 'enqueue'>;
}) {
  const { db } = deps;
  // Each message names up to 20 approvers and is rebuilt after every decision, and Slack allows
  // users.lookupByEmail about 50 times a minute (Tier 3): a workspace's user ids are kept a while.
  const slackIds = createReloadingCache<string>({ clock: deps.clock, ttlMs: 10 * 60_000, missTtlMs: 60_000 });

  /** The approvers as Slack shows them: a mention when the workspace knows their email, the email otherwise. */
  async function approverNames(slack: OrgSlack, action: Action): Promise<string[]> {
    const approvers = await approvalMailRepo.approvers(db, action.orgId, action.approvers ?? null);
    const names: string[] = [];
    for (const { email } of approvers.slice(0, 20)) {
      const key = `${slack.teamId}:${email.toLowerCase()}`;
      const id = await slackIds.get(key, () => slack.client.userIdByEmail(email)).catch(() => null);
      names.push(id ? `<@${id}>` : email);
    }
    return names;
  }

  /** The message of these calls as the record has them now: their decisions and the approvals that stand. */
  async function messageOf(
    action: Action,
    calls: MessageCall[] | Awaited<ReturnType<typeof approvalMailRepo.stagedCalls>>,
    approvers: string[],
    reader: Kysely<DB> = db,
  ) {
    const approvals = await standingApprovers(
      reader,
      calls.map((call) => call.id),
    );
    return approvalMessage({
      actionId: action.id,
      agentName: action.agentName ?? 'An agent',
      eventType: action.eventType,
      externalId: action.externalId,
      ruleName: action.ruleName,
      email: action.email,
      approvers,
      calls: calls.map((call): SlackCallView => {
        const decided = 'approval' in call ? call : undefined;
        const approvedInput = decided?.approvedInput ?? null;
        return {
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          input: approvedInput ?? call.input,
          edited: approvedInput !== null,
          why: whyItWaits(call),
          expiresAt: call.expiresAt,
          approval: decided?.approval ?? 'pending',
          decidedBy: decided
            ? (decided.decidedByEmail ?? (decided.decidedByExternalId && `<@${decided.decidedByExternalId}>`))
            : null,
          channel: decided?.decisionChannel ?? null,
          reason: decided?.decisionReason ?? null,
          decidedAt: decided?.decidedAt ?? null,
          approvalsRequired: action.minApprovals ?? 1,
          approvals: approvals
            .filter((approval) => approval.toolCallId === call.id)
            .map((approval) => ({
              by: approval.externalUserId ? `<@${approval.externalUserId}>` : (approval.email ?? 'someone'),
              reason: approval.reason,
            })),
          editable: call.toolName !== BUDGET_APPROVAL,
        };
      }),
    });
  }

  return {
    async notify(actionId: string): Promise<void> {
      const action = await approvalMailRepo.actionToNotify(db, actionId);
      if (!action?.notify.includes('slack') || action.status !== 'pending_approval') return;
      const told = await slackRepo.told(db, actionId);
      // A call still `sending` was interrupted (its message may or may not have gone): posted again.
      const due = (await approvalMailRepo.stagedCalls(db, actionId)).filter(
        (call) => call.expiresAt && !told.some((row) => row.toolCallId === call.id && row.status !== 'sending'),
      );
      if (due.length === 0) return;
      const ids = due.map((call) => call.id);
      const slack = await deps.slackOf(action.orgId);
      if (!slack) {
        await slackRepo.sending(
          db,
          due.map((call) => ({ id: randomUUID(), orgId: action.orgId, actionId, toolCallId: call.id, address: '' })),
        );
        const reason = 'the organization has no Slack integration';
        await slackRepo.settle(db, ids, { status: 'not_sent', reason, ts: null, channel: '' });
        deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'not_sent' }, due.length);
        return;
      }
      const { client, channel } = slack;
      await slackRepo.sending(
        db,
        due.map((call) => ({ id: randomUUID(), orgId: action.orgId, actionId, toolCallId: call.id, address: channel })),
      );
      const approvers = await approverNames(slack, action);
      const message = await messageOf(action, due, approvers);
      try {
        const posted = await client.postMessage({ channel, ...message });
        // Under the action's lock, which a decision holds until it commits: a decision that committed
        // before found no message to update, so the record is compared with the message here; a later
        // one finds the message and updates it itself.
        await transaction(db, async (trx) => {
          await slackRepo.lockAction(trx, actionId);
          await slackRepo.settle(trx, ids, { status: 'sent', reason: null, ts: posted.ts, channel: posted.channel });
          const calls = (await slackRepo.messageCalls(trx, actionId)).filter((call) => call.slackTs === posted.ts);
          if (JSON.stringify(await messageOf(action, calls, approvers, trx)) !== JSON.stringify(message))
            await deps.jobs.enqueue('approvals.slack-update', { actionId }, { trx });
        });
        deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'sent' }, due.length);
      } catch (error) {
        if (!(error instanceof SlackApiError)) throw error;
        const reason = `Slack refused the message: ${error.slackError}`;
        await slackRepo.settle(db, ids, { status: 'failed', reason, ts: null, channel });
        deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'failed' }, due.length);
      }
    },

    /** Rebuilds the action's Slack messages from the record: decided calls say by whom and how, and lose their buttons. */
    async refresh(actionId: string): Promise<void> {
      const action = await approvalMailRepo.actionToNotify(db, actionId);
      if (!action) return;
      const slack = await deps.slackOf(action.orgId);
      const calls = await slackRepo.messageCalls(db, actionId);
      if (!slack || calls.length === 0) return;
      const approvers = await approverNames(slack, action);
      for (const ts of new Set(calls.map((call) => call.slackTs!))) {
        const inMessage = calls.filter((call) => call.slackTs === ts);
        const message = await messageOf(action, inMessage, approvers);
        await slack.client.update({ channel: inMessage[0]!.slackChannel!, ts, ...message });
      }
    },
  };
}

export type SlackNotifier = ReturnType<typeof createSlackNotifier>;
