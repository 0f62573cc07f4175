import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * What the style guide asks of the code, checked so that it stays true: time comes from the
 * injected clock or the database's now(), files stay small enough to read whole, lines short enough
 * to read at all.
 */
const ROOT = join(import.meta.dirname, '../..');
const SOURCES = ['server/src', 'server/test', 'sdk/src', 'sdk/test', 'console/src'].map((dir) => join(ROOT, dir));
/** Generated from the OpenAPI document, not written. */
const GENERATED = new Set([join(ROOT, 'console/src/api/schema.d.ts')]);
const MAX_PRODUCTION_LINES = 300;
const MAX_LINE_LENGTH = 200;
/** What a person reads at once, and the formatter's width: production code stays within it (migrations keep their SQL as it ran). */
const MAX_PRODUCTION_LINE_LENGTH = 130;
const MIGRATIONS = join(ROOT, 'server/src/db/migrations');

function files(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : files(path);
    return /\.tsx?$/.test(entry.name) && !GENERATED.has(path) ? [path] : [];
  });
}

const all = SOURCES.flatMap(files);
const isTest = (path: string) => /\.test\.tsx?$/.test(path) || path.includes(`${join(ROOT, 'server/test')}/`);
const production = all.filter((path) => !isTest(path));
const name = (path: string) => relative(ROOT, path);

describe('the code base', () => {
  it("reads the time from the injected clock or the database's now(), never the wall clock directly", () => {
    const clock = join(ROOT, 'server/src/lib/clock.ts');
    const reads = production
      .filter((path) => path.startsWith(join(ROOT, 'server/src')) && path !== clock)
      .flatMap((path) =>
        readFileSync(path, 'utf8')
          .split('\n')
          .flatMap((line, index) =>
            /\bnew Date\(\)|\bDate\.now\(\)/.test(line) ? [`${name(path)}:${index + 1}: ${line.trim()}`] : [],
          ),
      );
    expect(reads).toEqual([]);
  });

  it(`keeps production files within ${MAX_PRODUCTION_LINES} lines`, () => {
    const long = production.flatMap((path) => {
      const lines = readFileSync(path, 'utf8').trimEnd().split('\n').length;
      return lines > MAX_PRODUCTION_LINES ? [`${name(path)}: ${lines} lines`] : [];
    });
    expect(long).toEqual([]);
  });

  it(`keeps production lines within ${MAX_PRODUCTION_LINE_LENGTH} characters`, () => {
    const long = production
      .filter((path) => !path.startsWith(MIGRATIONS))
      .flatMap((path) =>
        readFileSync(path, 'utf8')
          .split('\n')
          .flatMap((line, index) =>
            line.length > MAX_PRODUCTION_LINE_LENGTH ? [`${name(path)}:${index + 1} (${line.length})`] : [],
          ),
      );
    expect(long).toEqual([]);
  });

  it(`keeps lines within ${MAX_LINE_LENGTH} characters`, () => {
    const long = all.flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .flatMap((line, index) => (line.length > MAX_LINE_LENGTH ? [`${name(path)}:${index + 1} (${line.length})`] : [])),
    );
    expect(long).toEqual([]);
  });
});

describe('the install', () => {
  // npm 12 skips a dependency's install script unless package.json's allowScripts names it: unnamed,
  // the node@24 devDependency would install no Node, and `npm start` would run on the machine's.
  it("names every dependency whose install script must run in package.json's allowScripts", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    const lockfile = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; hasInstallScript?: boolean; link?: boolean }>;
    };
    const allowed = manifest.allowScripts ?? {};
    const withScripts = Object.entries(lockfile.packages).filter(([, entry]) => entry.hasInstallScript && !entry.link);
    const unreviewed = withScripts.flatMap(([path, { version }]) => {
      const packageName = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      return allowed[packageName] === true || allowed[`${packageName}@${version}`] === true ? [] : [`${packageName}@${version}`];
    });
    expect(withScripts.length).toBeGreaterThan(0); // the node@24 devDependency has one
    expect(unreviewed).toEqual([]);
  });
});
