/**
 * A service's own /metrics (Prometheus text exposition), read into its samples by name and labels as
 * written (`name{labels}`), for the benchmarks that print where the service's time went.
 */
export async function metricSamples(serviceUrl: string): Promise<Map<string, number>> {
  const response = await fetch(`${serviceUrl}/metrics`);
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}
