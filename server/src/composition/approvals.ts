import type { ToolRegistry } from '../features/agents/tool-registry.ts';
import { createApprovalsService } from '../features/approvals/approvals.service.ts';
import { createApprovalLinks } from '../features/approvals/email/approval-links.service.ts';
import { createApprovalNotifier } from '../features/approvals/email/approval-notifier.ts';
import { createApprovalReplies } from '../features/approvals/email/approval-replies.ts';
import type { ThreadMail } from '../features/email/thread-mail.ts';
import type { Shared } from './shared.ts';

/**
 * Decisions on waiting calls, and the email channel's parts: the notifications, the one-time links' pages, and replies
 * read as decisions (the console's and the API's routes take the service itself).
 */
export function composeApprovals(
  { config, db, clock, metrics, jobs, announce, wakeRunners }: Shared,
  deps: { threadMail: ThreadMail; tools: Pick<ToolRegistry, 'forOrg'> },
) {
  const approvals = createApprovalsService({ db, jobs, announce, wakeRunners, clock, metrics, tools: deps.tools });
  return {
    approvals,
    notifier: createApprovalNotifier({ db, mail: deps.threadMail, apiHost: config.apiHost, appHost: config.appHost, metrics }),
    replies: createApprovalReplies({ db, mail: deps.threadMail, approvals }),
    links: createApprovalLinks({ db, clock, approvals }),
  };
}
