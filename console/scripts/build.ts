// Builds the console into dist/ (what the service serves), precompresses its assets and prints the
// JavaScript budget. `--if-stale` skips the build when dist/ was built from the same sources:
// `npm start` runs it every time, and an unchanged console costs a hash of its sources.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const consoleDir = join(import.meta.dirname, '..');
const dist = join(consoleDir, 'dist');
const stampFile = join(dist, '.source-hash');
/** Initial JavaScript (gzipped) the issue allows: the entry chunk and what it imports statically. */
const INITIAL_JS_BUDGET_BYTES = 250 * 1024;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

function sourceHash(): string {
  const hash = createHash('sha256');
  const inputs = [
    ...filesUnder(join(consoleDir, 'src')),
    ...['index.html', 'vite.config.ts', 'package.json', 'scripts/build.ts'].map((file) => join(consoleDir, file)),
    join(consoleDir, '../package-lock.json'),
  ].sort();
  for (const file of inputs) hash.update(relative(consoleDir, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

const hash = sourceHash();
if (process.argv.includes('--if-stale') && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === hash) {
  process.stdout.write('Console is up to date (console/dist).\n');
  process.exit(0);
}

// What the service serves is a production build, whatever NODE_ENV the caller runs with (the tests' is `test`).
process.env.NODE_ENV = 'production';
const { build } = await import('vite');
await build({ root: consoleDir, logLevel: 'warn' });

// Precompressed copies: the service sends .br or .gz as the browser accepts, without compressing per request.
for (const file of filesUnder(join(dist, 'assets'))) {
  if (!/\.(js|css|svg|json)$/.test(file)) continue;
  const content = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(content, { level: 9 }));
  writeFileSync(`${file}.br`, brotliCompressSync(content, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
}

// The budget: the entry chunk and its static imports, gzipped, as a first visit downloads them.
const manifest = JSON.parse(readFileSync(join(dist, '.vite/manifest.json'), 'utf8')) as Record<
  string,
  { file: string; isEntry?: boolean; imports?: string[]; css?: string[] }
>;
const initial = new Set<string>();
const visit = (key: string) => {
  const chunk = manifest[key];
  if (!chunk || initial.has(chunk.file)) return;
  initial.add(chunk.file);
  for (const imported of chunk.imports ?? []) visit(imported);
};
for (const [key, chunk] of Object.entries(manifest)) if (chunk.isEntry) visit(key);
const gzipBytes = [...initial].reduce((sum, file) => sum + statSync(join(dist, `${file}.gz`)).size, 0);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const within = gzipBytes <= INITIAL_JS_BUDGET_BYTES;
process.stdout.write(
  `Console built into console/dist. Initial JavaScript: ${kb(gzipBytes)} gzipped (budget ${kb(INITIAL_JS_BUDGET_BYTES)}: ${within ? 'within' : 'OVER'}).\n`,
);
if (!within) process.exit(1);
writeFileSync(stampFile, hash);
