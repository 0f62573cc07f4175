import type { JobHandler } from '../../jobs/registry.ts';
import type { ApprovalsService } from './approvals.service.ts';
import type { ApprovalNotifier } from './email/approval-notifier.ts';
import type { ApprovalReplies } from './email/approval-replies.ts';

/** Approval deadlines, approval emails out, and replies to them in. */
export function approvalsJobHandlers(deps: {
  approvals: ApprovalsService;
  notifier: ApprovalNotifier;
  replies: ApprovalReplies;
}): {
  'approvals.expire': JobHandler<'approvals.expire'>;
  'approvals.notify': JobHandler<'approvals.notify'>;
  'approvals.reply': JobHandler<'approvals.reply'>;
} {
  return {
    'approvals.expire': ({ toolCallRowId }) => deps.approvals.expire(toolCallRowId),
    'approvals.notify': ({ actionId }) => deps.notifier.notify(actionId),
    'approvals.reply': ({ messageRowId }) => deps.replies.handle(messageRowId),
  };
}
