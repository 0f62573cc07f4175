import type { JobHandler } from '../../jobs/registry.ts';
import type { ApprovalsService } from './approvals.service.ts';
import type { ApprovalNotifier } from './email/approval-notifier.ts';
import type { ApprovalReplies } from './email/approval-replies.ts';
import type { SlackNotifier } from './slack/slack-notifier.ts';

/** Approval deadlines, approvers told (email, Slack) and Slack messages kept current, and replies to emails in. */
export function approvalsJobHandlers(deps: {
  approvals: ApprovalsService;
  notifier: ApprovalNotifier;
  slackNotifier: SlackNotifier;
  replies: ApprovalReplies;
}): {
  'approvals.expire': JobHandler<'approvals.expire'>;
  'approvals.notify': JobHandler<'approvals.notify'>;
  'approvals.slack-update': JobHandler<'approvals.slack-update'>;
  'approvals.reply': JobHandler<'approvals.reply'>;
} {
  return {
    'approvals.expire': ({ toolCallRowId }) => deps.approvals.expire(toolCallRowId),
    // Each channel the rule names is told on its own terms; a retry tells again only whom it has not told.
    // An attempt that lost its claim (cut off) stops between sends: its retry sends the rest, once. An
    // email the provider did not take (down, busy) is the retry's too, after Slack is told.
    'approvals.notify': async ({ actionId }, { lastAttempt, signal }) => {
      const emailFailure = await deps.notifier.notify(actionId, { signal, lastAttempt }).then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
      signal.throwIfAborted();
      await deps.slackNotifier.notify(actionId, { lastAttempt });
      if (emailFailure) throw emailFailure.error;
    },
    'approvals.slack-update': ({ actionId }, { signal }) => deps.slackNotifier.refresh(actionId, signal),
    // Its answer, if the provider did not take it, is sent again by the retry (the reply decides once).
    'approvals.reply': ({ messageRowId }, { lastAttempt }) => deps.replies.handle(messageRowId, { lastAttempt }),
  };
}
