// Usage: node move.mjs map.txt  (lines: "old/path.ts new/path.ts", relative to repo root)
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { dirname, relative, resolve, join } from 'node:path';
const root = '/work/main';
const map = new Map();
for (const line of readFileSync(process.argv[2], 'utf8').split('\n')) {
  const [a, b] = line.trim().split(/\s+/);
  if (a && b) map.set(resolve(root, a), resolve(root, b));
}
const files = execSync('git ls-files "*.ts" "*.tsx" "*.mjs" "*.js"', { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => resolve(root, f));
const re = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+)(['"])/g;
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const newFile = map.get(file) ?? file;
  const out = text.replace(re, (m, pre, spec, post) => {
    const target = resolve(dirname(file), spec);
    const newTarget = map.get(target) ?? target;
    if (newTarget === target && newFile === file) return m;
    let rel = relative(dirname(newFile), newTarget);
    if (!rel.startsWith('.')) rel = './' + rel;
    return pre + rel + post;
  });
  if (out !== text) writeFileSync(file, out);
}
for (const [a, b] of map) {
  mkdirSync(dirname(b), { recursive: true });
  execSync(`git mv ${JSON.stringify(a)} ${JSON.stringify(b)}`, { cwd: root });
}
