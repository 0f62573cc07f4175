import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { transaction } from '../../../db/after-commit.ts';
import type { DB } from '../../../db/schema.ts';
import type { JobRunner } from '../../../jobs/job-runner.ts';
import type { Clock } from '../../../lib/clock.ts';
import type { Logger } from 'pino';
import type { Metrics } from '../../../lib/metrics.ts';
import { createReloadingCache } from '../../../lib/reloading-cache.ts';
import { BUDGET_APPROVAL } from '../../actions/budget-hold.ts';
import { standingApprovers } from '../standing-approvals.ts';
import { approvalMailRepo } from '../email/approval-mail.repo.ts';
import { whyItWaits } from '../why-it-waits.ts';
import { approvalMessage, type SlackCallView } from './slack-blocks.ts';
import { SlackApiError, type SlackMetadata } from './slack-client.ts';
import type { OrgSlack } from './slack-integration.service.ts';
import { slackRepo } from './slack.repo.ts';

type Action = NonNullable<Awaited<ReturnType<typeof approvalMailRepo.actionToNotify>>>;
type MessageCall = Awaited<ReturnType<typeof slackRepo.messageCalls>>[number];
type StagedCall = Awaited<ReturnType<typeof approvalMailRepo.stagedCalls>>[number];
type Told = Awaited<ReturnType<typeof slackRepo.told>>;
/** Where a message is: its channel and Slack's ts. */
type Posted = { ts: string; channel: string };

/** The metadata of an approval message: its action and calls, by which a post cut off (a crash, no answer) is found again. */
const METADATA_EVENT = 'agent_platform_approval';
const metadataOf = (actionId: string, callIds: string[]): SlackMetadata => ({
  event_type: METADATA_EVENT,
  event_payload: { action_id: actionId, calls: callIds.join(',') },
});
/** How far before a cut-off post its message is looked for: the database's clock and Slack's may differ. */
const CLOCK_SKEW_SECONDS = 300;
const NO_LONGER_WAITS = 'the call no longer waited when its cut-off message could be posted again';

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
  logger: Pick<Logger, 'info'>;
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
  async function messageOf(action: Action, calls: MessageCall[] | StagedCall[], approvers: string[], reader: Kysely<DB> = db) {
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

  /**
   * The messages that cut-off posts (a crash, or Slack not answering) left in their channels, by call (the newest of each):
   * found in the channel's history by their metadata. Slack has no idempotency key, and reading history
   * needs a scope approvals do not require (channels:history, groups:history for a private channel):
   * without it nothing is found, and the calls that still wait are posted again.
   */
  async function postedBeforeCutOff(slack: OrgSlack, action: Action, cutOff: Told): Promise<Map<string, Posted>> {
    const found = new Map<string, Posted>();
    const channelOf = (row: Told[number]) => row.address || slack.channel;
    for (const channel of new Set(cutOff.map(channelOf))) {
      const rows = cutOff.filter((row) => channelOf(row) === channel);
      const since = Math.min(...rows.map((row) => row.updatedAt.getTime())) / 1000 - CLOCK_SKEW_SECONDS;
      let messages: Awaited<ReturnType<OrgSlack['client']['history']>>;
      try {
        messages = await slack.client.history(channel, since.toFixed(6), 5);
      } catch (error) {
        if (!(error instanceof SlackApiError)) throw error;
        deps.logger.info(
          { orgId: action.orgId, actionId: action.id, slackError: error.slackError },
          'The channel history cannot be read: an approval message whose post was cut off is posted again',
        );
        continue;
      }
      for (const { ts, metadata } of messages) {
        if (metadata?.event_type !== METADATA_EVENT || metadata.event_payload.action_id !== action.id) continue;
        for (const id of String(metadata.event_payload.calls ?? '').split(','))
          if (rows.some((row) => row.toolCallId === id) && !found.has(id)) found.set(id, { ts, channel });
      }
    }
    return found;
  }

  /**
   * Ends the posts that were cut off (their calls still `sending`): a message found in the channel is
   * theirs, rebuilt from the record by a job (decisions made meanwhile); a call not found that no
   * longer waits is not posted again. Returns the calls so ended.
   */
  async function endCutOff(slack: OrgSlack | undefined, action: Action, cutOff: Told, waiting: Set<string>) {
    const found = slack && cutOff.length > 0 ? await postedBeforeCutOff(slack, action, cutOff) : new Map<string, Posted>();
    for (const ts of new Set([...found.values()].map((posted) => posted.ts))) {
      const ids = [...found].filter(([, posted]) => posted.ts === ts).map(([id]) => id);
      const { channel } = found.get(ids[0]!)!;
      await slackRepo.settle(db, ids, { status: 'sent', reason: null, ts, channel });
      deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'sent' }, ids.length);
    }
    if (found.size > 0) await deps.jobs.enqueue('approvals.slack-update', { actionId: action.id });
    const moot = cutOff.filter((row) => !found.has(row.toolCallId) && !waiting.has(row.toolCallId));
    for (const row of moot)
      await slackRepo.settle(db, [row.toolCallId], {
        status: 'not_sent',
        reason: NO_LONGER_WAITS,
        ts: null,
        channel: row.address ?? '',
      });
    if (moot.length > 0) deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'not_sent' }, moot.length);
    return new Set([...found.keys(), ...moot.map((row) => row.toolCallId)]);
  }

  /**
   * Posts one message of the due calls (already `sending`) and settles them by Slack's answer. One Slack
   * did not answer, or a 429, leaves them `sending` and fails the job, to be tried again (endCutOff first),
   * unless this is its last attempt.
   */
  async function post(slack: OrgSlack, action: Action, due: StagedCall[], lastAttempt: boolean): Promise<void> {
    const { client, channel } = slack;
    const ids = due.map((call) => call.id);
    const approvers = await approverNames(slack, action);
    const message = await messageOf(action, due, approvers);
    try {
      const posted = await client.postMessage({ channel, ...message, metadata: metadataOf(action.id, ids) });
      // Under the action's lock, which a decision holds until it commits: a decision that committed
      // before found no message to update, so the record is compared with the message here; a later
      // one finds the message and updates it itself.
      await transaction(db, async (trx) => {
        await slackRepo.lockAction(trx, action.id);
        await slackRepo.settle(trx, ids, { status: 'sent', reason: null, ts: posted.ts, channel: posted.channel });
        const calls = (await slackRepo.messageCalls(trx, action.id)).filter((call) => call.slackTs === posted.ts);
        if (JSON.stringify(await messageOf(action, calls, approvers, trx)) !== JSON.stringify(message))
          await deps.jobs.enqueue('approvals.slack-update', { actionId: action.id }, { trx });
      });
      deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'sent' }, due.length);
    } catch (error) {
      if (!(error instanceof SlackApiError)) throw error;
      // Slack did not answer (a timeout, a lost connection, a 5xx) or asked to wait (429): the calls stay
      // `sending` and the job tries again, looking first for a message that got into the channel (endCutOff).
      const unanswered = error.slackError === 'unreachable';
      if ((unanswered || error.slackError === 'ratelimited') && !lastAttempt) throw error;
      const reason = unanswered
        ? 'Slack did not answer the post, to the last attempt (the message may be in the channel)'
        : `Slack refused the message: ${error.slackError}`;
      await slackRepo.settle(db, ids, { status: 'failed', reason, ts: null, channel });
      deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'failed' }, due.length);
    }
  }

  return {
    /** `lastAttempt`: the job's last try, after which a post Slack did not answer is settled failed rather than tried again. */
    async notify(actionId: string, options: { lastAttempt: boolean }): Promise<void> {
      const action = await approvalMailRepo.actionToNotify(db, actionId);
      if (!action?.notify.includes('slack')) return;
      const waiting =
        action.status === 'pending_approval'
          ? (await approvalMailRepo.stagedCalls(db, actionId)).filter((call) => call.expiresAt)
          : [];
      const told = await slackRepo.told(db, actionId);
      // A call still `sending` was cut off: its message may or may not be in the channel.
      const cutOff = told.filter((row) => row.status === 'sending');
      if (waiting.length === 0 && cutOff.length === 0) return;
      const slack = await deps.slackOf(action.orgId);
      const ended = await endCutOff(slack, action, cutOff, new Set(waiting.map((call) => call.id)));
      const due = waiting.filter(
        (call) => !ended.has(call.id) && !told.some((row) => row.toolCallId === call.id && row.status !== 'sending'),
      );
      if (due.length === 0) return;
      // One row per call, `sending` until Slack answers: a retried job finds what never settled.
      const address = slack?.channel ?? '';
      await slackRepo.sending(
        db,
        due.map((call) => ({ id: randomUUID(), orgId: action.orgId, actionId, toolCallId: call.id, address })),
      );
      if (slack) return post(slack, action, due, options.lastAttempt);
      const reason = 'the organization has no Slack integration';
      await slackRepo.settle(
        db,
        due.map((call) => call.id),
        { status: 'not_sent', reason, ts: null, channel: '' },
      );
      deps.metrics.approvalNotifications.inc({ channel: 'slack', outcome: 'not_sent' }, due.length);
    },

    /**
     * Rebuilds the action's Slack messages from the record: decided calls say by whom and how, and lose
     * their buttons. Stops before the next message once `signal` aborts (the job's retry rebuilds them).
     */
    async refresh(actionId: string, signal?: AbortSignal): Promise<void> {
      const action = await approvalMailRepo.actionToNotify(db, actionId);
      if (!action) return;
      const slack = await deps.slackOf(action.orgId);
      const calls = await slackRepo.messageCalls(db, actionId);
      if (!slack || calls.length === 0) return;
      const approvers = await approverNames(slack, action);
      for (const ts of new Set(calls.map((call) => call.slackTs!))) {
        signal?.throwIfAborted();
        const inMessage = calls.filter((call) => call.slackTs === ts);
        const message = await messageOf(action, inMessage, approvers);
        // With its metadata again: whether Slack keeps what an update leaves out is not promised.
        const metadata = metadataOf(
          actionId,
          inMessage.map((call) => call.id),
        );
        await slack.client.update({ channel: inMessage[0]!.slackChannel!, ts, ...message, metadata });
      }
    },
  };
}

export type SlackNotifier = ReturnType<typeof createSlackNotifier>;
