import type { Migration, MigrationProvider } from 'kysely/migration';
import * as foundation from './0001_foundation.ts';
import * as actionWebhooks from './0002_action_webhooks.ts';
import * as documents from './0003_documents.ts';
import * as agentRuntime from './0004_agent_runtime.ts';
import * as callbacks from './0005_callbacks.ts';
import * as ledgerReferences from './0006_ledger_references.ts';
import * as idempotentMessageIds from './0007_idempotent_message_ids.ts';
import * as userModelUsage from './0008_user_model_usage.ts';
import * as email from './0009_email.ts';
import * as emailMessages from './0010_email_messages.ts';
import * as orgEvents from './0011_org_events.ts';
import * as actionRunQueue from './0012_action_run_queue.ts';
import * as actionTakeovers from './0013_action_takeovers.ts';
import * as mcpServers from './0014_mcp_servers.ts';
import * as approvalChannels from './0015_approval_channels.ts';
import * as approvalEmail from './0016_approval_email.ts';
import * as usageBudgets from './0017_usage_budgets.ts';
import * as traceContext from './0018_trace_context.ts';
import * as approvalReplies from './0019_approval_replies.ts';
import * as agentVersions from './0020_agent_versions.ts';
import * as experiments from './0021_experiments.ts';
import * as approvedArguments from './0022_approved_arguments.ts';
import * as sentBack from './0023_sent_back.ts';
import * as minApprovals from './0024_min_approvals.ts';
import * as slack from './0025_slack.ts';
import * as notificationQueue from './0026_notification_queue.ts';
import * as callbackClaim from './0027_callback_claim.ts';
import * as watchedCheck from './0028_watched_check.ts';
import * as inboxNotify from './0029_inbox_notify.ts';
import * as inboxApprovers from './0030_inbox_approvers.ts';
import * as inboxArgumentRules from './0031_inbox_argument_rules.ts';
import * as blankModelNames from './0032_blank_model_names.ts';
import * as sealedExtras from './0033_sealed_extras.ts';
import * as jobLeases from './0034_job_leases.ts';
import * as leaseWaiters from './0035_lease_waiters.ts';
import * as abandonedSends from './0036_abandoned_sends.ts';
import * as callbackClaimPlan from './0037_callback_claim_plan.ts';
import * as toolCallPosition from './0038_tool_call_position.ts';
import * as actionRunTokens from './0039_action_run_tokens.ts';
import * as runClaimFence from './0040_run_claim_fence.ts';

/** Every migration, in order. PGlite and PostgreSQL run the same list. */
const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_action_webhooks': actionWebhooks,
  '0003_documents': documents,
  '0004_agent_runtime': agentRuntime,
  '0005_callbacks': callbacks,
  '0006_ledger_references': ledgerReferences,
  '0007_idempotent_message_ids': idempotentMessageIds,
  '0008_user_model_usage': userModelUsage,
  '0009_email': email,
  '0010_email_messages': emailMessages,
  '0011_org_events': orgEvents,
  '0012_action_run_queue': actionRunQueue,
  '0013_action_takeovers': actionTakeovers,
  '0014_mcp_servers': mcpServers,
  '0015_approval_channels': approvalChannels,
  '0016_approval_email': approvalEmail,
  '0017_usage_budgets': usageBudgets,
  '0018_trace_context': traceContext,
  '0019_approval_replies': approvalReplies,
  '0020_agent_versions': agentVersions,
  '0021_experiments': experiments,
  '0022_approved_arguments': approvedArguments,
  '0023_sent_back': sentBack,
  '0024_min_approvals': minApprovals,
  '0025_slack': slack,
  '0026_notification_queue': notificationQueue,
  '0027_callback_claim': callbackClaim,
  '0028_watched_check': watchedCheck,
  '0029_inbox_notify': inboxNotify,
  '0030_inbox_approvers': inboxApprovers,
  '0031_inbox_argument_rules': inboxArgumentRules,
  '0032_blank_model_names': blankModelNames,
  '0033_sealed_extras': sealedExtras,
  '0034_job_leases': jobLeases,
  '0035_lease_waiters': leaseWaiters,
  '0036_abandoned_sends': abandonedSends,
  '0037_callback_claim_plan': callbackClaimPlan,
  '0038_tool_call_position': toolCallPosition,
  '0039_action_run_tokens': actionRunTokens,
  '0040_run_claim_fence': runClaimFence,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
