import type { ApprovalsService } from '../features/actions/approvals.service.ts';
import { createApprovalLinks } from '../features/approval-mail/approval-links.service.ts';
import { createApprovalNotifier } from '../features/approval-mail/approval-notifier.ts';
import { createApprovalReplies } from '../features/approval-mail/approval-replies.ts';
import type { ThreadMail } from '../features/email/thread-mail.ts';
import type { Shared } from './shared.ts';

/** Approvals by email: the notifications, the one-time links' pages, and replies read as decisions. */
export function composeApprovalMail(
  { config, db, clock, metrics }: Shared,
  deps: { threadMail: ThreadMail; approvals: ApprovalsService },
) {
  return {
    notifier: createApprovalNotifier({ db, mail: deps.threadMail, apiHost: config.apiHost, appHost: config.appHost, metrics }),
    replies: createApprovalReplies({ db, mail: deps.threadMail, approvals: deps.approvals }),
    links: createApprovalLinks({ db, clock, approvals: deps.approvals }),
  };
}
