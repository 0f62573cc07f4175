import { pino, type Logger } from 'pino';
import { composeAccounts } from './composition/accounts.ts';
import { composeExperiments } from './composition/experiments.ts';
import { composeAgents } from './composition/agents.ts';
import { composeApprovals } from './composition/approvals.ts';
import { composeEmail } from './composition/email.ts';
import { composeUsage } from './composition/usage.ts';
import { composeMcp } from './composition/mcp.ts';
import type { Shared } from './composition/shared.ts';
import { composeWebhooks } from './composition/webhooks.ts';
import type { Config } from './config.ts';
import { configuredDatabase, openDatabase, type Database } from './db/database.ts';
import { approvalsJobHandlers } from './features/approvals/approvals.jobs.ts';
import { createApprovalReplyClaims } from './features/approvals/email/approval-replies.ts';
import { authJobHandlers } from './features/auth/auth.jobs.ts';
import { jobLeaseHandlers } from './jobs/job-leases.jobs.ts';
import { emailJobHandlers } from './features/email/email.jobs.ts';
import { createOrgEvents } from './features/events/org-events.ts';
import { ingestJobHandlers } from './features/ingest/ingest.jobs.ts';
import { createOpsService } from './features/ops/ops.service.ts';
import { createJobRunner } from './jobs/job-runner.ts';
import type { JobHandlers } from './jobs/registry.ts';
import { systemClock, type Clock } from './lib/clock.ts';
import { createSecretBox } from './lib/crypto.ts';
import { loggerOptions } from './lib/logger.ts';
import { createMetrics } from './lib/metrics.ts';
import { BUS_TOPICS, createProcessBus } from './lib/process-bus.ts';
import { createRateLimiters } from './lib/rate-limit.ts';
import { createTracing } from './lib/tracing.ts';

export interface ContainerOptions {
  clock?: Clock;
  logger?: Logger;
  /** An already open database (tests make a fresh one per file). */
  database?: Database;
}

/** The composition root: the process's shared parts, then each area's services (composition/), then the job handlers. */
export async function createContainer(config: Config, options: ContainerOptions = {}) {
  const logger = options.logger ?? pino(loggerOptions(config.logLevel));
  // What the configuration fell back on (a generated development key, an unknown sampler), in every kind of process.
  for (const notice of config.notices) logger.warn(notice);
  const database = options.database ?? (await openDatabase(configuredDatabase(config)));
  const metrics = createMetrics();
  const bus = createProcessBus({ postgresUrl: database.url, listenInProcess: database.listenInProcess, logger });
  const jobs = createJobRunner({ boss: database.jobsOptions, db: database.db, logger, metrics, bus, ...config.jobs });
  const shared: Shared = {
    config,
    database,
    db: database.db,
    clock: options.clock ?? systemClock,
    logger,
    metrics,
    box: createSecretBox(config.masterKey),
    bus,
    jobs,
    tracing: createTracing(config.tracing, metrics),
    announce: () => bus.signal(BUS_TOPICS.callbacks),
    wakeRunners: (sent) => bus.signal(BUS_TOPICS.actionRuns, sent),
  };
  const { db, clock, box } = shared;
  const rateLimiters = createRateLimiters({ redisUrl: config.rateLimit.redisUrl });

  /** Set when the process begins to shut down (readiness then fails, so that load balancers move on). */
  let draining = false;
  const accounts = composeAccounts(shared, rateLimiters);
  const ops = createOpsService({
    db,
    pingDatabase: () => database.ping(),
    pingRedis: rateLimiters.ping,
    jobs,
    draining: () => draining,
    metrics,
    logger,
  });
  const webhooks = composeWebhooks(shared, rateLimiters);
  // Replies to approval emails come in through the inbound path, which exists before the approvals they decide:
  // the hook that takes them needs only the job queue.
  const email = composeEmail(shared, { replyHook: createApprovalReplyClaims({ jobs }) });
  const mcp = composeMcp(shared);
  const usage = composeUsage(shared);
  const agents = await composeAgents(shared, {
    userLimits: accounts.services.userLimits,
    budgets: usage.budgets,
    tools: [email.sendEmailTool],
    toolSources: [mcp.toolSource],
    offeredToMember: mcp.mcpServers.offeredToMember,
  });
  const experiments = composeExperiments(shared, { modelTurn: agents.modelTurn, tools: agents.tools });
  const approvals = composeApprovals(shared, { threadMail: email.threadMail, tools: agents.tools });
  const { dispatcher, writer, httpClient } = webhooks;
  const { tools, runner, runDispatcher, renderPool } = agents;
  bus.subscribe(BUS_TOPICS.actionRuns, () => runDispatcher.wake());
  bus.subscribe(BUS_TOPICS.emailNotifications, () => email.notifications.wake());
  const services = {
    ...accounts.services,
    ops,
    ...webhooks.services,
    ...agents.services,
    ...usage,
    ...email.services,
    mcpServers: mcp.mcpServers,
    approvals: approvals.approvals,
    approvalLinks: approvals.links,
    slackIntegration: approvals.slackIntegration,
    slackInteractions: approvals.slackInteractions,
    orgIdOf: approvals.orgIdOf,
    experiments: experiments.experiments,
  };

  // Each feature registers the handlers of its queues.
  const jobHandlers: JobHandlers = {
    ...authJobHandlers(services),
    ...ingestJobHandlers(services),
    ...emailJobHandlers(email),
    ...approvalsJobHandlers(approvals),
    ...jobLeaseHandlers({ db }),
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
    tracing: shared.tracing,
    orgEvents: createOrgEvents({ bus, db, clock, logger }),
    mailer: accounts.mailer,
    limits: accounts.limits,
    externalAuthRegistry: accounts.externalAuthRegistry,
    tools,
    dispatcher,
    services,
    middlewares: accounts.middlewares,
    orgAccess: accounts.orgAccess,
    trustedOrigins: accounts.trustedOrigins,

    /** Migrates the database and starts the job queue; with `workers`, this process runs jobs too. */
    async start({ workers }: { workers: boolean }) {
      await database.migrate();
      database.maintenance?.start(logger);
      await jobs.start();
      if (workers) {
        await bus.listenForWork();
        await jobs.work(jobHandlers, {
          concurrency: { 'email.lookup-message-id': config.email.concurrency, 'email.send-again': config.email.concurrency },
        });
        // Actions: queued ones, and those a stopped process was running once their lease lapses.
        runDispatcher.start();
        // Experiments' replays, in slots of their own; those a stopped process was running once their lease lapses.
        experiments.dispatcher.start();
        // Mail notifications: stored ones, and those a stopped process was processing once their lease lapses.
        email.notifications.start();
        dispatcher.start();
      }
    },

    /** Readiness fails from now on; the caller then closes the HTTP server and this container. */
    beginDraining() {
      draining = true;
    },

    async close() {
      draining = true;
      // One grace for all the work in flight, which runs on meanwhile: each stop below gets what is left of it.
      const graceEnds = performance.now() + config.shutdownGraceMs;
      const graceLeft = () => Math.max(0, graceEnds - performance.now());
      // Another worker process hears the signals of new work from now on, while this one drains.
      await bus.stopWork();
      await writer.drain();
      await runDispatcher.stop(graceLeft());
      await experiments.dispatcher.stop(graceLeft());
      await email.notifications.stop(graceLeft());
      await runner.drain();
      await dispatcher.stop();
      await httpClient.close();
      await jobs.stop(graceLeft());
      await renderPool.close();
      await mcp.connections.close();
      await bus.close();
      await rateLimiters.close();
      await database.close();
      await shared.tracing.shutdown();
      // prom-client's default metrics observe garbage collection process-wide, for good: their
      // histogram holds the registry, whose gauges read this database. Emptied, it holds nothing of ours.
      metrics.registry.clear();
    },
  };
}

export type Container = Awaited<ReturnType<typeof createContainer>>;
