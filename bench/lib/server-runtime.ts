import { metricSamples } from './service-metrics.ts';

/**
 * What a server's runtime did during a measured load, read from its own /metrics (prom-client's
 * default metrics): garbage collection by kind, and the event loop's delay. Reading /metrics resets
 * the event-loop delay histogram, so the reading taken at the start leaves the end's to the load alone.
 */
export interface RuntimeSnapshot {
  /** Seconds spent in each kind of collection since the process started (minor, major, incremental). */
  gcSeconds: Record<string, number>;
  gcCount: Record<string, number>;
  /** Since the previous reading. */
  loopDelayMeanMs: number;
  loopDelayP99Ms: number;
  heapUsedMb: number;
}

export async function runtimeSnapshot(serviceUrl: string): Promise<RuntimeSnapshot> {
  const samples = await metricSamples(serviceUrl);
  const sample = (name: string) => samples.get(name) ?? Number.NaN;
  const gcSeconds: Record<string, number> = {};
  const gcCount: Record<string, number> = {};
  for (const kind of ['minor', 'major', 'incremental']) {
    // A kind that has not run yet has no sample.
    gcSeconds[kind] = samples.get(`nodejs_gc_duration_seconds_sum{kind="${kind}"}`) ?? 0;
    gcCount[kind] = samples.get(`nodejs_gc_duration_seconds_count{kind="${kind}"}`) ?? 0;
  }
  return {
    gcSeconds,
    gcCount,
    loopDelayMeanMs: sample('nodejs_eventloop_lag_mean_seconds') * 1000,
    loopDelayP99Ms: sample('nodejs_eventloop_lag_p99_seconds') * 1000,
    heapUsedMb: sample('nodejs_heap_size_used_bytes') / 2 ** 20,
  };
}

/** One line: each kind's collection time per unit of work (µs) and count, the loop's delay, the heap at the end. */
export function describeRuntime(before: RuntimeSnapshot, after: RuntimeSnapshot, units: number): string {
  const kinds = Object.keys(after.gcSeconds).map((kind) => {
    const us = ((after.gcSeconds[kind]! - (before.gcSeconds[kind] ?? 0)) * 1e6) / units;
    return `${kind} ${us.toFixed(0)} µs (${after.gcCount[kind]! - (before.gcCount[kind] ?? 0)})`;
  });
  return `collections ${kinds.join(', ')}; event-loop delay mean ${after.loopDelayMeanMs.toFixed(1)} ms, p99 ${after.loopDelayP99Ms.toFixed(1)} ms; heap ${after.heapUsedMb.toFixed(0)} MB`;
}
