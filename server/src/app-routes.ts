import { approvalLinksRoutes } from './features/approvals/email/approval-links.routes.ts';
import { slackIntegrationRoutes } from './features/approvals/slack/slack-integration.routes.ts';
import { slackInteractionsRoutes } from './features/approvals/slack/slack-interactions.routes.ts';
import { approvalsRoutes } from './features/approvals/approvals.routes.ts';
import { callbacksRoutes } from './features/callbacks/callbacks.routes.ts';
import { modelCredentialsRoutes } from './features/agents/model-credentials.routes.ts';
import { toolPreferencesRoutes } from './features/actions/tool-preferences.routes.ts';
import { authRoutes } from './features/auth/auth.routes.ts';
import { oauthRoutes } from './features/auth/oauth/oauth.routes.ts';
import { opsRoutes } from './features/ops/ops.routes.ts';
import { orgsRoutes } from './features/orgs/orgs.routes.ts';
import { threadsRoutes } from './features/threads/threads.routes.ts';
import { experimentsRoutes } from './features/experiments/experiments.routes.ts';
import { agentVersionsRoutes } from './features/agents/agent-versions.routes.ts';
import { agentsRoutes } from './features/agents/agents.routes.ts';
import { ingestRoutes } from './features/ingest/ingest.routes.ts';
import { webhooksRoutes } from './features/webhooks/webhooks.routes.ts';
import { ledgerRoutes } from './features/ledger/ledger.routes.ts';
import { usageRoutes } from './features/usage/usage.routes.ts';
import { deliveriesRoutes } from './features/ingest/deliveries.routes.ts';
import { documentsRoutes } from './features/documents/documents.routes.ts';
import { emailIntegrationRoutes } from './features/email/email-integration.routes.ts';
import { emailThreadsRoutes } from './features/email/email-threads.routes.ts';
import { mailWebhookRoutes } from './features/email/mail-webhook.routes.ts';
import { inboxesRoutes } from './features/email/inboxes.routes.ts';
import { eventsRoutes } from './features/events/events.routes.ts';
import { mcpRoutes } from './features/mcp/mcp.routes.ts';
import type { HttpApp } from './app.ts';
import type { Container } from './container.ts';
import type { IngestFastPath } from './features/ingest/ingest.fast-path.ts';

/** Every feature's routes, each given the services it needs from the container. */
export async function registerRoutes(app: HttpApp, container: Container, ingestFastPath: IngestFastPath): Promise<void> {
  const { config, metrics } = container;
  const { services, middlewares } = container;
  await app.register(opsRoutes({ ops: services.ops, metrics }));
  await app.register(
    authRoutes({
      auth: services.auth,
      oauth: services.oauth,
      passwordReset: services.passwordReset,
      externalAuth: services.externalAuth,
      userLimits: services.userLimits,
      middlewares,
      limits: container.limits,
      isProduction: config.isProduction,
    }),
  );
  await app.register(
    oauthRoutes({
      oauth: services.oauth,
      limits: { codehost: container.limits.codehost, idp: container.limits.idp },
      redirectUris: { codehost: config.codehost?.redirectUri, idp: config.idp?.redirectUri },
      appHost: config.appHost,
      isProduction: config.isProduction,
    }),
  );
  await app.register(orgsRoutes({ orgs: services.orgs, middlewares }));
  await app.register(threadsRoutes({ threads: services.threads, middlewares }));
  const { orgAccess } = container;
  await app.register(agentsRoutes({ agents: services.agents, orgAccess }));
  await app.register(agentVersionsRoutes({ versions: services.agentVersions, orgAccess }));
  await app.register(experimentsRoutes({ experiments: services.experiments, orgAccess }));
  await app.register(webhooksRoutes({ webhooks: services.webhooks, sendTest: services.sendTest, orgAccess }));
  await app.register(ledgerRoutes({ ledger: services.ledger, orgAccess }));
  await app.register(deliveriesRoutes({ deliveries: services.deliveries, orgAccess }));
  await app.register(ingestRoutes({ fastPath: ingestFastPath }));
  await app.register(documentsRoutes({ documents: services.documents, orgAccess }));
  await app.register(approvalsRoutes({ approvals: services.approvals, orgAccess }));
  await app.register(usageRoutes({ usage: services.usage, budgets: services.budgets, orgAccess }));
  await app.register(approvalLinksRoutes({ links: services.approvalLinks }));
  await app.register(slackIntegrationRoutes({ slackIntegration: services.slackIntegration, orgAccess }));
  await app.register(slackInteractionsRoutes({ interactions: services.slackInteractions, orgIdOf: services.orgIdOf }));
  await app.register(callbacksRoutes({ callbacks: services.callbacks, orgAccess }));
  await app.register(mcpRoutes({ mcpServers: services.mcpServers, orgAccess }));
  await app.register(toolPreferencesRoutes({ toolPreferences: services.toolPreferences, middlewares }));
  await app.register(modelCredentialsRoutes({ modelCredentials: services.modelCredentials, orgAccess }));
  await app.register(emailIntegrationRoutes({ emailIntegration: services.emailIntegration, orgAccess }));
  await app.register(inboxesRoutes({ inboxes: services.inboxes, orgAccess }));
  await app.register(emailThreadsRoutes({ threads: services.emailThreads, orgAccess }));
  await app.register(eventsRoutes({ events: container.orgEvents, orgAccess }));
  await app.register(
    mailWebhookRoutes({ intake: services.mailWebhook, maxBytes: config.email.webhookMaxBytes, tracing: container.tracing }),
  );
}
