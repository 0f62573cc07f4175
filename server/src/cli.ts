import { enableCompileCache, flushCompileCache } from 'node:module';
import { ConfigError, loadConfig } from './config.ts';
import { AppError } from './lib/errors.ts';
import { adminSocketPath, lockEmbeddedDatabase, sendToAdminSocket } from './admin-socket.ts';
import { parseAdminCommand, runAdminCommand, UsageError } from './admin-commands.ts';

// Each start compiles the service's TypeScript and its dependencies, over two thousand modules: Node
// keeps what it compiled (the stripped source and V8's code) in the OS's temporary directory
// (NODE_COMPILE_CACHE moves it, NODE_DISABLE_COMPILE_CACHE=1 turns it off) and reuses it while a file
// is unchanged. It applies from here on: to the service's modules, loaded below, not the few above.
enableCompileCache();

// The service itself (container, app) loads only for a command that needs it: a mistyped command
// is answered in a fraction of the time.
const service = () =>
  Promise.all([import('./container.ts'), import('./main.ts')]).then(([container, main]) => ({ ...container, ...main }));

const USAGE = `Usage: agent-platform <command> [options]

Commands:
  serve                                  start the HTTP API (and the workers unless RUN_WORKERS=false)
  worker                                 run background jobs only
  migrate                                apply database migrations and exit
  openapi                                print the API's OpenAPI document (what GET /openapi.json serves)
  orgs create --slug S --name N          create an organization
  orgs add-member --org S --email E      add a user to an organization
  users create --email E --password P --role Admin|Guest [--org S] [--username U] [--first-name F] [--last-name L]
  users set-password --email E --password P
`;

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (!command || command === '--help' || command === 'help') {
    process.stdout.write(USAGE);
    return command ? 0 : 1;
  }
  const config = loadConfig();
  // Whoever opens the embedded database holds its data directory's socket first (see admin-socket.ts).
  const lockIfEmbedded = () => (config.databaseUrl ? undefined : lockEmbeddedDatabase(config.dataDir));
  switch (command) {
    case 'serve':
    case 'worker': {
      const lock = await lockIfEmbedded();
      const { serve, work } = await service();
      await (command === 'serve' ? serve : work)(config, {
        started: (container) => {
          // Written now, not at exit: a process that is killed or crashes never reaches it.
          flushCompileCache();
          lock?.answerWith((args) => runAdminCommand(container.services, args));
        },
        closed: async () => lock?.release(),
      });
      return -1;
    }
    case 'migrate': {
      const lock = await lockIfEmbedded();
      try {
        const { configuredDatabase, openDatabase } = await import('./db/database.ts');
        const database = await openDatabase(configuredDatabase(config));
        await database.migrate().finally(() => database.close());
      } finally {
        await lock?.release();
      }
      process.stdout.write('Migrations applied\n');
      return 0;
    }
    case 'openapi': {
      // The document describes routes, not data: an empty in-memory database is enough to build them.
      const [{ createContainer }, { buildApp }, { openDatabase }] = await Promise.all([
        import('./container.ts'),
        import('./app.ts'),
        import('./db/database.ts'),
      ]);
      // Silent: stdout carries the document and nothing else.
      const container = await createContainer(
        { ...config, logLevel: 'silent' },
        { database: await openDatabase({ pgliteDataDir: 'memory://' }) },
      );
      const app = await buildApp(container);
      await app.ready();
      const document = `${JSON.stringify(app.swagger(), null, 2)}\n`;
      await app.close();
      await container.database.close();
      // process.exit would cut a piped write short: return once it is flushed.
      await new Promise<void>((resolve, reject) =>
        process.stdout.write(document, (error) => (error ? reject(error) : resolve())),
      );
      return 0;
    }
    case 'orgs':
    case 'users': {
      parseAdminCommand(argv);
      if (!config.databaseUrl) {
        const forwarded = await sendToAdminSocket(adminSocketPath(config.dataDir), argv);
        if (forwarded) {
          (forwarded.ok ? process.stdout : process.stderr).write(`${forwarded.message}\n`);
          return forwarded.ok ? 0 : 1;
        }
        process.stderr.write(
          `No agent-platform server is running from ${config.dataDir}: writing to its embedded PGlite database. ` +
            'If your server runs on PostgreSQL, run this with its DATABASE_URL.\n',
        );
      }
      const lock = await lockIfEmbedded();
      try {
        const { openForAdminCommands } = await import('./composition/admin.ts');
        const admin = await openForAdminCommands(config);
        try {
          process.stdout.write(`${await runAdminCommand(admin.services, argv)}\n`);
          return 0;
        } finally {
          await admin.close();
        }
      } finally {
        await lock?.release();
      }
    }
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`${error.message}\n\n${USAGE}`);
    else if (error instanceof ConfigError || error instanceof AppError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
