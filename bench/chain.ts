/**
 * Every benchmark that issue 39's targets are read from, in its default form, one after the other (a
 * chain takes about 25 minutes on a 2-core machine). Each one's whole output goes to a log of its own in
 * BENCH_CHAIN_DIR (default: a new folder under the system's temporary one), with its start and end
 * times; at the end each benchmark's summary (its lines from the last that names a median on) is
 * printed together, then the machine's speed in the chain (the ranges of the baselines printed).
 *
 *   npm run bench:chain
 *   BENCH_CHAIN_ONLY=email,scale npm run bench:chain
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineSpeed, summary } from './lib/chain-summary.ts';

interface Step {
  name: string;
  script: string;
  env?: Record<string, string>;
}

const STEPS: Step[] = [
  { name: 'email', script: 'bench:email' },
  { name: 'actions', script: 'bench:actions', env: { BENCH_CALIBRATE: '1', BENCH_RATE: '1500' } },
  { name: 'callbacks', script: 'bench:callbacks', env: { BENCH_ENDPOINTS: '2' } },
  { name: 'scale', script: 'bench:scale' },
  { name: 'mcp', script: 'bench:mcp' },
  { name: 'ingest-pglite', script: 'bench:ingest', env: { BENCH_DB: 'pglite' } },
  { name: 'ingest-postgres', script: 'bench:ingest', env: { BENCH_DB: 'postgres' } },
  { name: 'session', script: 'bench:session' },
];

const only = process.env.BENCH_CHAIN_ONLY?.split(',').map((name) => name.trim());
const unknown = only?.filter((name) => !STEPS.some((step) => step.name === name)) ?? [];
if (unknown.length > 0) {
  console.error(`bench:chain: no such benchmark: ${unknown.join(', ')} (known: ${STEPS.map((step) => step.name).join(', ')})`);
  process.exit(2);
}
const steps = only ? STEPS.filter((step) => only.includes(step.name)) : STEPS;
const dir = process.env.BENCH_CHAIN_DIR ?? mkdtempSync(join(tmpdir(), 'bench-chain-'));
mkdirSync(dir, { recursive: true });
const time = () => new Date().toISOString().slice(11, 19);

/** Runs one benchmark with its output in `<dir>/<name>.log`; resolves with its exit code. */
function run(step: Step): Promise<number> {
  const log = createWriteStream(join(dir, `${step.name}.log`));
  const child = spawn('npm', ['run', step.script], { env: { ...process.env, ...step.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  // Resolved once the log is on disk: the summary at the end reads it back.
  return new Promise((resolve) => child.on('close', (code) => log.end(() => resolve(code ?? 1))));
}

console.log(`bench:chain: ${steps.map((step) => step.name).join(', ')}; logs in ${dir}`);
const outcomes: Array<{ step: Step; code: number; began: string; ended: string }> = [];
for (const step of steps) {
  const began = time();
  console.log(
    `${began} ${step.name} (${Object.entries(step.env ?? {})
      .map(([key, value]) => `${key}=${value} `)
      .join('')}npm run ${step.script})`,
  );
  const code = await run(step);
  outcomes.push({ step, code, began, ended: time() });
}
console.log(`${time()} done\n`);
const logs = outcomes.map(({ step }) => readFileSync(join(dir, `${step.name}.log`), 'utf8'));
outcomes.forEach(({ step, code, began, ended }, index) => {
  console.log(`${step.name} (${began} to ${ended}${code === 0 ? '' : `, exit code ${code}`}):`);
  for (const line of summary(logs[index]!)) console.log(`  ${line}`);
});
console.log('the machine in this chain (its baselines in the logs, lowest to highest):');
for (const line of machineSpeed(logs)) console.log(`  ${line}`);
process.exitCode = outcomes.some((outcome) => outcome.code !== 0) ? 1 : 0;
