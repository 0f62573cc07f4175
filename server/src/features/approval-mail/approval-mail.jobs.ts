import type { JobHandler } from '../../jobs/registry.ts';
import type { ApprovalNotifier } from './approval-notifier.ts';
import type { ApprovalReplies } from './approval-replies.ts';

/** Approval emails out, and replies to them in. */
export function approvalMailJobHandlers(deps: { notifier: ApprovalNotifier; replies: ApprovalReplies }): {
  'approvals.notify': JobHandler<'approvals.notify'>;
  'approvals.reply': JobHandler<'approvals.reply'>;
} {
  return {
    'approvals.notify': ({ actionId }) => deps.notifier.notify(actionId),
    'approvals.reply': ({ messageRowId }) => deps.replies.handle(messageRowId),
  };
}
