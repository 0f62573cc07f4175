import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { createContainer, type Container } from './container.ts';

const SHUTDOWN_TIMEOUT_MS = 25_000;

/** Stops accepting, finishes requests and jobs, closes the database; once, whatever calls it. */
function onShutdown(container: Container, app: { close(): Promise<unknown> } | undefined, extra: () => Promise<void> = async () => {}) {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    container.logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      container.logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    try {
      await app?.close();
      await extra();
      await container.close();
      process.exit(0);
    } catch (error) {
      container.logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/** `serve`: the HTTP API, and the workers too unless RUN_WORKERS=false. */
export async function serve(config: Config, hooks: { afterStart?: (container: Container) => Promise<() => Promise<void>> } = {}) {
  const container = await createContainer(config);
  for (const notice of config.notices) container.logger.warn(notice);
  await container.start({ workers: config.runWorkers });
  const app = await buildApp(container);
  const stopExtra = await hooks.afterStart?.(container);
  onShutdown(container, app, stopExtra);
  await app.listen({ host: config.host, port: config.port });
  const where = container.database.kind === 'pglite' ? `PGlite in ${config.dataDir}/pglite` : 'PostgreSQL';
  container.logger.info(
    `Agent Platform API on ${config.apiHost} (listening on ${config.host}:${config.port}; database: ${where}; workers: ${config.runWorkers ? 'on' : 'off'})`,
  );
  if ((await container.services.users.count()) === 0) {
    container.logger.warn(
      'No users yet. Create the first organization and its admin: npm run cli -- orgs create --slug acme --name "Acme", then ' +
        "npm run cli -- users create --email admin@example.com --password 'a long password' --role Admin --org acme",
    );
  }
  return { container, app };
}

/** `worker`: runs jobs only, for scaling workers apart from the API on PostgreSQL. */
export async function work(config: Config) {
  const container = await createContainer(config);
  await container.start({ workers: true });
  onShutdown(container, undefined);
  container.logger.info('Agent Platform worker running');
  return container;
}
