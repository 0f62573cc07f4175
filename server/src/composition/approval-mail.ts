import type { ApprovalsService } from '../features/actions/approvals.service.ts';
import { createApprovalLinks } from '../features/approval-mail/approval-links.service.ts';
import { createApprovalNotifier } from '../features/approval-mail/approval-notifier.ts';
import { createApprovalReplies } from '../features/approval-mail/approval-replies.ts';
import type { OutboundMail } from '../features/email/outbound-mail.ts';
import type { Shared } from './shared.ts';

/** Approvals by email: the notifications, the one-time links' pages, and replies read as decisions. */
export function composeApprovalMail(
  { config, db, clock, logger, metrics, jobs }: Shared,
  deps: { deliver: OutboundMail; approvals: ApprovalsService },
) {
  return {
    notifier: createApprovalNotifier({ db, deliver: deps.deliver, apiHost: config.apiHost, appHost: config.appHost, metrics, logger }),
    replies: createApprovalReplies({ db, jobs, deliver: deps.deliver, approvals: deps.approvals }),
    links: createApprovalLinks({ db, clock, approvals: deps.approvals }),
  };
}
