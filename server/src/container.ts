import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/database.ts';
import { authJobHandlers } from './features/auth/auth.jobs.ts';
import { ingestJobHandlers } from './features/ingest/ingest.jobs.ts';
import { actionsJobHandlers } from './features/actions/actions.jobs.ts';
import { createAuthService } from './features/auth/auth.service.ts';
import { createExternalAuthService } from './features/auth/external/external-auth.service.ts';
import { createJwtAuthProvider } from './features/auth/external/jwt-provider.ts';
import { createUserLimitsService } from './features/auth/external/user-limits.service.ts';
import { createExternalAuthRegistry } from './features/auth/external/registry.ts';
import { createSessionMiddlewares } from './features/auth/middlewares.ts';
import { createCodehostProvider } from './features/auth/oauth/codehost.ts';
import { createIdpProvider } from './features/auth/oauth/idp.ts';
import { createOAuthService } from './features/auth/oauth/oauth.service.ts';
import { createPasswordResetService } from './features/auth/password-reset.service.ts';
import { createSessionsService } from './features/auth/sessions.service.ts';
import { createOrgsService } from './features/orgs/orgs.service.ts';
import { createThreadsService } from './features/threads/threads.service.ts';
import { createUsersService } from './features/users/users.service.ts';
import { createJobRunner } from './jobs/job-runner.ts';
import { createAgentsService } from './features/agents/agents.service.ts';
import { createDeliveriesService } from './features/ingest/deliveries.service.ts';
import { createDeliveryPipeline } from './features/ingest/delivery-pipeline.ts';
import { createDeliveryWriter } from './features/ingest/delivery-writer.ts';
import { createIngestCache } from './features/ingest/ingest-cache.ts';
import { createIngestService } from './features/ingest/ingest.service.ts';
import { createLedgerService } from './features/ledger/ledger.service.ts';
import { createSendTest } from './features/webhooks/send-test.ts';
import { createWebhooksService } from './features/webhooks/webhooks.service.ts';
import { createOrgAccess } from './features/orgs/org-access.ts';
import { createDocumentsService, generateDocumentTool } from './features/documents/documents.service.ts';
import { createRenderPool } from './features/documents/render-pool.ts';
import { createEmailIntegrationService } from './features/email/email-integration.service.ts';
import { createMailClient } from './features/email/mail-client.ts';
import { createInboxesService } from './features/email/inboxes.service.ts';
import { createMailWebhookIntake } from './features/email/mail-webhook.service.ts';
import { createInboundEmail } from './features/email/inbound.service.ts';
import { createDeliveryEvents } from './features/email/delivery-events.service.ts';
import { createNotificationProcessor } from './features/email/notification-processor.ts';
import { createEmailThreadsService } from './features/email/email-threads.service.ts';
import { createSendEmail } from './features/email/send-email.ts';
import { emailJobHandlers } from './features/email/email.jobs.ts';
import { createApprovalsService } from './features/actions/approvals.service.ts';
import { createActionRunner } from './features/actions/action-runner.ts';
import { createRunDispatcher } from './features/actions/run-dispatcher.ts';
import { createModelCredentialsService } from './features/agents/model-credentials.service.ts';
import { createModelResolver } from './features/agents/model-provider.ts';
import { createToolPreferencesService } from './features/actions/tool-preferences.service.ts';
import { createToolRegistry, registerToolModules } from './features/agents/tool-registry.ts';
import { createCallbackDispatcher } from './features/callbacks/dispatcher.ts';
import { createCallbacksService } from './features/callbacks/callbacks.service.ts';
import type { JobHandlers } from './jobs/registry.ts';
import { createGuardedHttpAgents } from './lib/http-client.ts';
import { systemClock, type Clock } from './lib/clock.ts';
import { createSecretBox } from './lib/crypto.ts';
import { loggerOptions } from './lib/logger.ts';
import { BUS_TOPICS, createProcessBus } from './lib/process-bus.ts';
import { createOrgEvents } from './features/events/org-events.ts';
import { createOpsService } from './features/ops/ops.service.ts';
import { createMetrics } from './lib/metrics.ts';
import { createPasswordHasher } from './lib/passwords.ts';
import { createRateLimiters } from './lib/rate-limit.ts';
import { createSystemMailer } from './lib/system-mailer.ts';

export interface ContainerOptions {
  clock?: Clock;
  logger?: Logger;
  /** An already open database (tests make a fresh one per file). */
  database?: Database;
}

/** The composition root: database -> repositories -> services -> job handlers. */
export async function createContainer(config: Config, options: ContainerOptions = {}) {
  const logger = options.logger ?? pino(loggerOptions(config.logLevel));
  const clock = options.clock ?? systemClock;
  const database =
    options.database ??
    (await openDatabase({ url: config.databaseUrl, poolSize: config.databasePoolSize, pgliteDataDir: join(config.dataDir, 'pglite') }));
  const { db } = database;
  const metrics = createMetrics();
  const box = createSecretBox(config.masterKey);
  const passwords = createPasswordHasher(config.passwordHashCost);
  const mailer = createSystemMailer({ ...config.mail, logBodies: !config.isProduction }, logger);
  const bus = createProcessBus({ postgresUrl: database.url, listenInProcess: database.listenInProcess, logger });
  const jobs = createJobRunner({ boss: database.jobsOptions, logger, metrics, bus, pollMs: config.jobs.pollMs });
  const rateLimiters = createRateLimiters({ redisUrl: config.rateLimit.redisUrl });
  const authPerMinute = { points: config.rateLimit.authPerMinute, durationSeconds: 60 };
  const limits = {
    login: rateLimiters.create({ name: 'auth-login', ...authPerMinute }),
    codehost: rateLimiters.create({ name: 'auth-codehost', ...authPerMinute }),
    idp: rateLimiters.create({ name: 'auth-idp', ...authPerMinute }),
    external: rateLimiters.create({ name: 'auth-external', ...authPerMinute }),
    forgotPasswordByIp: rateLimiters.create({ name: 'auth-forgot-ip', ...authPerMinute }),
    forgotPasswordByEmail: rateLimiters.create({ name: 'auth-forgot-email', points: 5, durationSeconds: 60 * 60 }),
  };

  /** Set when the process begins to shut down (readiness then fails, so that load balancers move on). */
  let draining = false;
  const externalAuthRegistry = createExternalAuthRegistry();
  if (config.externalAuth.jwt) externalAuthRegistry.registerExternalAuthProvider(createJwtAuthProvider(config.externalAuth.jwt));

  const users = createUsersService({ db, passwords });
  const sessions = createSessionsService({ db, clock, bus, cacheTtlMs: config.sessionCacheTtlMs });
  const services = {
    users,
    sessions,
    auth: createAuthService({ db, passwords, sessions }),
    passwordReset: createPasswordResetService({ db, clock, jobs, mailer, passwords, sessions, appHost: config.appHost, logger }),
    oauth: createOAuthService({
      db,
      users,
      sessions,
      providers: {
        ...(config.codehost ? { codehost: createCodehostProvider(config.codehost) } : {}),
        ...(config.idp ? { idp: createIdpProvider(config.idp) } : {}),
      },
    }),
    externalAuth: createExternalAuthService({
      db,
      registry: externalAuthRegistry,
      users,
      sessions,
      box,
      defaultProvider: config.externalAuth.defaultProvider,
    }),
    userLimits: createUserLimitsService({ db, registry: externalAuthRegistry, box, clock, logger, ...config.userLimits }),
    orgs: createOrgsService({ db }),
    threads: createThreadsService({ db }),
    ops: createOpsService({
      db,
      pingDatabase: () => database.ping(),
      pingRedis: rateLimiters.ping,
      jobs,
      draining: () => draining,
      metrics,
      logger,
    }),
  };
  const trustedOrigins: ReadonlySet<string> = new Set([config.appHost, config.apiHost]);
  const middlewares = createSessionMiddlewares({ sessions, trustedOrigins });
  const orgAccess = createOrgAccess({ middlewares, orgs: services.orgs });

  // After a transition that may have written callbacks commits: the dispatchers wake up.
  const announce = () => bus.signal(BUS_TOPICS.callbacks);
  // After runnable actions commit: the run dispatchers of every process claim them.
  const wakeRunners = () => bus.signal(BUS_TOPICS.actionRuns);
  const callbacks = createCallbacksService({
    db,
    box,
    clock,
    allowPrivateNetworks: config.callbacks.allowPrivateNetworks,
    announce,
  });
  const httpAgents = createGuardedHttpAgents({ allowPrivateNetworks: config.callbacks.allowPrivateNetworks });
  const dispatcher = createCallbackDispatcher({
    db,
    bus,
    metrics,
    logger,
    clock,
    httpAgents,
    decrypt: (encrypted) => box.decrypt(encrypted),
    options: {
      concurrency: config.callbacks.concurrency,
      timeoutMs: config.callbacks.timeoutMs,
      retryScheduleMs: config.callbacks.retryScheduleMs,
    },
  });

  const ingestCache = createIngestCache({ db, box, bus, clock });
  const pipeline = createDeliveryPipeline({ db, cache: ingestCache, clock });
  const writer = createDeliveryWriter({
    db,
    wakeRunners,
    metrics,
    clock,
    maxInFlight: database.kind === 'pglite' ? 1 : config.ingestWriteConcurrency,
  });
  const webhooks = createWebhooksService({ db, box, bus, apiHost: config.apiHost, clock });
  // Tools are registered below (and from TOOL_MODULES) before the server takes a request.
  const tools = createToolRegistry();
  const webhookServices = {
    agents: createAgentsService({ db, bus, tools }),
    webhooks,
    ingest: createIngestService({
      db,
      cache: ingestCache,
      pipeline,
      writer,
      clock,
      rateLimiters,
      metrics,
      logger,
      ipLimitPerMinute: config.rateLimit.webhookIpPerMinute,
      maxPendingBodies: config.ingestMaxPendingBodies,
    }),
    deliveries: createDeliveriesService({
      db,
      cache: ingestCache,
      pipeline,
      writer,
      clock,
      logger,
      metrics,
      messageIdRetentionMs: config.messageIdRetentionMs,
    }),
    ledger: createLedgerService({ db, callbacks }),
    sendTest: createSendTest({ db, webhooks, cache: ingestCache, pipeline, writer }),
    callbacks,
  };

  const mail = createMailClient({ ...config.mailApi, now: () => clock.now().getTime() });
  const emailIntegration = createEmailIntegrationService({ db, box, clock, logger, mail });
  const deliveryEvents = createDeliveryEvents({ db, box, mail, clock });
  const emailNotifications = createNotificationProcessor({
    db,
    jobs,
    clock,
    logger,
    leaseMs: config.email.leaseMs,
    deliveryEvents,
    inbound: createInboundEmail({
      db,
      box,
      mail,
      wakeRunners,
      limits: {
        maxAttachmentBytes: config.email.maxAttachmentBytes,
        maxAttachments: config.email.maxAttachments,
        downloadTimeoutMs: config.mailApi.timeoutMs,
        autoRepliesPerThreadPerHour: config.email.autoRepliesPerThreadPerHour,
      },
    }),
  });
  const emailServices = {
    emailIntegration,
    inboxes: createInboxesService({ db, integration: emailIntegration }),
    mailWebhook: createMailWebhookIntake({ db, box, clock, jobs, logger, wakeWorkers: () => jobs.notify('email.process') }),
    emailThreads: createEmailThreadsService({ db }),
  };

  const renderPool = createRenderPool({ threads: config.documents.renderThreads, timeoutMs: config.documents.renderTimeoutMs });
  const documents = createDocumentsService({ db, renderer: renderPool });
  tools.register(generateDocumentTool(documents));
  tools.register(createSendEmail({ db, box, mail, jobs, clock, integration: emailIntegration, maxRecipients: config.email.maxRecipients }));
  await registerToolModules(tools, config.toolModules);
  const runner = createActionRunner({
    db,
    jobs,
    wakeRunners,
    tools,
    logger,
    clock,
    announce,
    userLimits: services.userLimits,
    resolveModel: createModelResolver({ box, defaults: config.model }),
    defaultProvider: config.model.provider,
    limits: {
      maxSteps: config.actions.maxSteps,
      leaseMs: config.actions.leaseMs,
      modelTimeoutMs: config.model.timeoutMs,
      modelMaxRetries: config.model.maxRetries,
    },
    writeConcurrency: database.kind === 'pglite' ? 1 : config.ingestWriteConcurrency,
  });
  const runDispatcher = createRunDispatcher({
    db,
    runner,
    concurrency: config.actions.concurrency,
    leaseMs: config.actions.leaseMs,
    pollMs: config.jobs.pollMs,
    metrics,
    logger,
  });
  bus.subscribe(BUS_TOPICS.actionRuns, () => runDispatcher.wake());
  const agentServices = {
    documents,
    runner,
    approvals: createApprovalsService({ db, jobs, announce, wakeRunners, clock }),
    toolPreferences: createToolPreferencesService({ db, tools }),
    modelCredentials: createModelCredentialsService({ db, box }),
  };

  // Each feature registers the handlers of its queues.
  const jobHandlers: JobHandlers = {
    ...authJobHandlers(services),
    ...ingestJobHandlers(webhookServices),
    ...actionsJobHandlers({ approvals: agentServices.approvals }),
    ...emailJobHandlers({ notifications: emailNotifications, deliveryEvents }),
  };

  return {
    config,
    logger,
    clock,
    database,
    db,
    metrics,
    box,
    jobs,
    bus,
    orgEvents: createOrgEvents({ bus, db, clock, logger }),
    mailer,
    limits,
    externalAuthRegistry,
    tools,
    dispatcher,
    services: { ...services, ...webhookServices, ...agentServices, ...emailServices },
    middlewares,
    orgAccess,
    trustedOrigins,

    /** Migrates the database and starts the job queue; with `workers`, this process runs jobs too. */
    async start({ workers }: { workers: boolean }) {
      await database.migrate();
      await jobs.start();
      if (workers) {
        await jobs.work(jobHandlers, {
          concurrency: {
            'email.process': config.email.concurrency,
            'email.lookup-message-id': config.email.concurrency,
          },
        });
        // Actions: queued ones, and those a stopped process was running once their lease lapses.
        runDispatcher.start();
        // Notifications a stopped process was processing are taken over once their lease lapses.
        await emailNotifications.recover({ atStart: true });
        dispatcher.start();
      }
    },

    /** Readiness fails from now on; the caller then closes the HTTP server and this container. */
    beginDraining() {
      draining = true;
    },

    async close() {
      draining = true;
      await writer.drain();
      await runDispatcher.stop(10_000);
      await runner.drain();
      await dispatcher.stop();
      httpAgents.destroy();
      await jobs.stop();
      await renderPool.close();
      await bus.close();
      await rateLimiters.close();
      await database.close();
    },
  };
}

export type Container = Awaited<ReturnType<typeof createContainer>>;
