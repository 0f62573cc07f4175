import { orgsRepo } from '../features/orgs/orgs.repo.ts';
import type { ToolRegistry } from '../features/agents/tool-registry.ts';
import { createApprovalsService } from '../features/approvals/approvals.service.ts';
import { createApprovalLinks } from '../features/approvals/email/approval-links.service.ts';
import { createApprovalNotifier } from '../features/approvals/email/approval-notifier.ts';
import { createApprovalReplies } from '../features/approvals/email/approval-replies.ts';
import { createSlackClients } from '../features/approvals/slack/slack-client.ts';
import { createSlackIntegrationService } from '../features/approvals/slack/slack-integration.service.ts';
import { createSlackInteractions } from '../features/approvals/slack/slack-interactions.ts';
import { createSlackNotifier } from '../features/approvals/slack/slack-notifier.ts';
import { slackRepo } from '../features/approvals/slack/slack.repo.ts';
import type { ThreadMail } from '../features/email/thread-mail.ts';
import type { Shared } from './shared.ts';

/**
 * Decisions on waiting calls, and their channels' parts: email (the notifications, the one-time links'
 * pages, replies read as decisions) and Slack (the org's app, its messages and interactions). The
 * console's and the API's routes take the service itself.
 */
export function composeApprovals(
  { config, db, clock, metrics, jobs, announce, wakeRunners, box, logger }: Shared,
  deps: { threadMail: ThreadMail; tools: Pick<ToolRegistry, 'forOrg'> },
) {
  const slackIntegration = createSlackIntegrationService({
    db,
    box,
    slack: createSlackClients(config.slackApi),
    apiHost: config.apiHost,
  });
  const approvals = createApprovalsService({
    db,
    jobs,
    announce,
    wakeRunners,
    clock,
    metrics,
    tools: deps.tools,
    // A decision on a call shown in Slack, on any channel, updates its message (by a job, woken once the decision commits).
    afterDecision: async (trx, call) => {
      if (await slackRepo.shown(trx, call.id)) await jobs.enqueue('approvals.slack-update', { actionId: call.actionId }, { trx });
    },
  });
  const slackOf = slackIntegration.open;
  return {
    approvals,
    notifier: createApprovalNotifier({ db, mail: deps.threadMail, apiHost: config.apiHost, appHost: config.appHost, metrics }),
    replies: createApprovalReplies({ db, mail: deps.threadMail, approvals }),
    links: createApprovalLinks({ db, clock, approvals }),
    slackIntegration,
    slackNotifier: createSlackNotifier({ db, clock, slackOf, metrics, jobs, logger }),
    slackInteractions: createSlackInteractions({ db, clock, slackOf, approvals, tools: deps.tools, logger }),
    orgIdOf: async (slugOrId: string) => (await orgsRepo.findBySlugOrId(db, slugOrId))?.id,
  };
}
