// `npm start`: builds the console when its sources changed, then runs the server in this very
// process. npm passes SIGTERM and SIGINT on to the process its script runs ("exec" in the script
// makes that this one, not a shell): with no shell or second npm in between, the server gets the
// signal and shuts down gracefully, and stopping `npm start` stops the service.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const build = spawnSync(process.execPath, [join(import.meta.dirname, '../console/scripts/build.ts'), '--if-stale'], {
  stdio: 'inherit',
});
if (build.status !== 0) process.exit(build.status ?? 1);

process.argv.splice(2, process.argv.length, 'serve');
await import('../server/src/cli.ts');
