/**
 * What `bench:chain` prints at its end, read back from the benchmarks' logs: each one's summary, and
 * the machine's speed in the chain (its baselines' ranges), without which a figure in milliseconds
 * cannot be compared with another day's (docs/benchmarks.md: the same code met and missed its
 * targets on fast and slow machines).
 */

/** A benchmark's summary: its lines from the last one that names a median on (the last 6 lines of a single round). */
export function summary(output: string): string[] {
  const lines = output.split('\n').filter((line) => line.trim() !== '');
  const last = lines.findLastIndex((line) => line.includes('median of'));
  return last >= 0 ? lines.slice(last) : lines.slice(-6);
}

/** The baselines the benchmarks print: what each is, its unit, and the line that gives it. */
const SPEEDS: Array<{ what: string; unit: string; pattern: RegExp }> = [
  { what: 'pgbench', unit: 'single-row inserts/s', pattern: /^pgbench[^:]*:\s*([\d,]+) (?:tps|single-row inserts\/s)/ },
  { what: 'bare Node server (bench:session)', unit: 'requests/s', pattern: /^bare node http\s+:\s*([\d,]+) req\/s/ },
  { what: 'bare Node POST server (bench:ingest)', unit: 'requests/s', pattern: /^bare node http POST\s*:\s*([\d,]+) req\/s/ },
  { what: 'bare client (bench:callbacks)', unit: 'POSTs/s', pattern: /bare client\s*:\s*([\d,]+) POSTs\/s/ },
];

/** The action server's CPU per action in the tracing-off runs of `bench:actions`: how fast this machine runs the service's JavaScript. */
function actionServerCpu(output: string): number[] {
  const values: number[] = [];
  let tracingOff = false;
  for (const line of output.split('\n')) {
    // A run's heading: "tracing off", "tracing on (OTLP/HTTP ...)", "tracing off again (calibration: ...)".
    const heading = /^tracing (off|on)( again)?( \(|$)/.exec(line);
    if (heading) tracingOff = heading[1] === 'off';
    const cpu = /^CPU per action\s*: server ([\d.]+) ms/.exec(line);
    if (cpu && tracingOff) values.push(Number(cpu[1]));
  }
  return values;
}

const range = (values: number[], format: (value: number) => string) => {
  const low = Math.min(...values);
  const high = Math.max(...values);
  return low === high ? format(low) : `${format(low)} to ${format(high)}`;
};

/** The machine's speed over the chain, one line per baseline that some benchmark printed. */
export function machineSpeed(outputs: string[]): string[] {
  const lines = outputs.flatMap((output) => output.split('\n').map((line) => line.trim()));
  const found = SPEEDS.flatMap(({ what, unit, pattern }) => {
    const values = lines.flatMap((line) => {
      const match = pattern.exec(line);
      return match ? [Number(match[1]!.replaceAll(',', ''))] : [];
    });
    return values.length > 0 ? [`${what}: ${range(values, (value) => value.toLocaleString('en-US'))} ${unit}`] : [];
  });
  const cpu = outputs.flatMap(actionServerCpu);
  if (cpu.length > 0)
    found.push(`the action server, tracing off (bench:actions): ${range(cpu, (value) => value.toFixed(2))} ms of CPU per action`);
  return found;
}
