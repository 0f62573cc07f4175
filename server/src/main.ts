import type { Server } from 'node:http';
import { getPriority, setPriority } from 'node:os';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { createContainer, type Container } from './container.ts';

/** How long requests in flight get to finish once a serve process stops accepting; the rest are cut. */
const REQUEST_DRAIN_MS = 10_000;
/** A shutdown still going past the requests' drain and the work's grace (SHUTDOWN_GRACE_SECONDS) hung: 25 s by default. */
const shutdownTimeoutMs = (config: Config) => REQUEST_DRAIN_MS + config.shutdownGraceMs + 5_000;

/**
 * Closes the HTTP server: stops accepting, lets requests in flight finish, and closes each kept-alive
 * connection as soon as it is idle. Node closes only the connections idle when close() is called;
 * one that finishes its request afterwards would stay open until its keep-alive timeout (and a
 * client that does not send again on it would hold the shutdown that long).
 */
async function closeHttp(app: HttpApp): Promise<void> {
  const idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
  const cut = setTimeout(() => app.server.closeAllConnections(), REQUEST_DRAIN_MS);
  try {
    await app.close();
  } finally {
    clearInterval(idleSweep);
    clearTimeout(cut);
  }
}

type HttpApp = { close(): Promise<unknown>; server: Server };

/**
 * Stops accepting, finishes requests and jobs, closes the database; once, whatever calls it. Listens
 * from the start: a signal during start-up waits for the start to finish, then shuts down.
 */
function onShutdown(container: Container, started: Promise<{ app?: HttpApp }>, hooks: ProcessHooks) {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    container.logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      container.logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, shutdownTimeoutMs(container.config));
    timer.unref();
    try {
      container.beginDraining();
      const { app } = await started;
      if (app) await closeHttp(app);
      await container.close();
      await hooks.closed?.();
      process.exit(0);
    } catch (error) {
      container.logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  // Kept for the whole shutdown: a second signal (Ctrl-C reaches the process from the terminal and
  // again from npm, which passes it on) must not end the process before it has drained.
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * A rejection that nothing handled is a bug to see, not a reason to stop serving every other request
 * and job (Node's default is to exit): it is logged at error level and counted in /metrics.
 */
function reportUnhandledRejections(container: Container): void {
  process.on('unhandledRejection', (reason) => {
    container.logger.error({ err: reason }, 'unhandled promise rejection (a bug; the process goes on)');
    container.metrics.unhandledRejections.inc();
  });
}

/**
 * A worker sharing a machine with `serve` processes lowers its CPU priority (raises its niceness, which
 * needs no privilege), so that acknowledgements are not queued behind answering work. Never raised.
 */
function yieldToServing(niceness: number, container: Container): void {
  try {
    if (niceness > getPriority()) setPriority(niceness);
  } catch (error) {
    container.logger.warn({ err: error, niceness }, 'could not lower the worker process priority');
  }
}

/** What the CLI adds to a process: `started` once it runs, `closed` once its database is closed. */
export interface ProcessHooks {
  started?: (container: Container) => void;
  closed?: () => Promise<void>;
}

/** `serve`: the HTTP API, and the workers too unless RUN_WORKERS=false. */
export async function serve(config: Config, hooks: ProcessHooks = {}) {
  const container = await createContainer(config);
  reportUnhandledRejections(container);
  const { promise: started, resolve: startedWith } = Promise.withResolvers<{ app?: HttpApp }>();
  onShutdown(container, started, hooks);
  await container.start({ workers: config.runWorkers });
  const app = await buildApp(container);
  hooks.started?.(container);
  // Node's default accept queue (511) overflows when senders open connections faster than a busy
  // event loop accepts them; each dropped connection waits for its SYN to be sent again (1 s, 3 s,
  // 7 s, 15 s, 31 s). The kernel caps this at net.core.somaxconn (4096 on current Linux).
  await app.listen({ host: config.host, port: config.port, backlog: 65_535 });
  startedWith({ app });
  const where = container.database.kind === 'pglite' ? `PGlite in ${config.dataDir}/pglite` : 'PostgreSQL';
  container.logger.info(
    `Agent Platform API on ${config.apiHost} (listening on ${config.host}:${config.port}; ` +
      `database: ${where}; workers: ${config.runWorkers ? 'on' : 'off'})`,
  );
  await hintFirstAdmin(container);
  return { container, app };
}

/** With no user yet, the log says how to create the first admin (and org, if none was made before this start). */
async function hintFirstAdmin(container: Container) {
  if ((await container.services.users.count()) > 0) return;
  // On PostgreSQL the CLI opens the database itself: it needs the server's DATABASE_URL.
  const cli = container.database.kind === 'pglite' ? 'npm run cli --' : 'DATABASE_URL=postgres://... npm run cli --';
  // An org made before this start (`orgs create` needs no server) is named, not created again.
  const org = await container.services.orgs.oldest();
  const createAdmin = (slug: string) =>
    `${cli} users create --email admin@example.com --password 'a long password' --role Admin --org ${slug}`;
  const createOrg = `${cli} orgs create --slug acme --name "Acme"`;
  container.logger.warn(
    org
      ? `No users yet. Create the first admin of ${org.slug}: ${createAdmin(org.slug)}`
      : `No users yet. Create the first organization and its admin: ${createOrg}, then ${createAdmin('acme')}`,
  );
}

/** `worker`: runs jobs only, for scaling workers apart from the API on PostgreSQL. */
export async function work(config: Config, hooks: ProcessHooks = {}) {
  const container = await createContainer({ ...config, databasePoolSize: config.worker.databasePoolSize });
  reportUnhandledRejections(container);
  yieldToServing(config.worker.niceness, container);
  const starting = container.start({ workers: true });
  onShutdown(
    container,
    starting.then(() => ({})),
    hooks,
  );
  await starting;
  hooks.started?.(container);
  container.logger.info('Agent Platform worker running');
  return container;
}
