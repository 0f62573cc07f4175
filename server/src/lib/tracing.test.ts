import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver } from '../../test/helpers/otlp-receiver.ts';
import { createMetrics } from './metrics.ts';
import { createTracing, type TracesSampler } from './tracing.ts';

let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
beforeAll(async () => {
  otlp = await startOtlpReceiver();
});
afterAll(async () => {
  await otlp?.close();
});

/** Whether a span started under each parent is recorded, with this sampler. */
async function recorded(sampler: TracesSampler) {
  const tracing = createTracing(
    {
      tracesUrl: `${otlp.url}/v1/traces`,
      headers: {},
      serviceName: 'sampler-test',
      recordContent: false,
      sampler,
      maxQueueSize: 16,
      scheduledDelayMs: 10,
      exportTimeoutMs: 1000,
    },
    createMetrics(),
  );
  const parent = (flags: string) => `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-${flags}`;
  const spans = {
    root: tracing.start('root', null),
    underSampled: tracing.start('child', parent('01')),
    underUnsampled: tracing.start('child', parent('00')),
  };
  const result = Object.fromEntries(Object.entries(spans).map(([name, span]) => [name, span.isRecording()]));
  await tracing.shutdown();
  return result;
}

describe('the configured sampler', () => {
  it('decides which spans are recorded, following the caller where it is parent-based', async () => {
    expect(await recorded({ name: 'parentbased_always_on', ratio: 1 })).toEqual({
      root: true,
      underSampled: true,
      underUnsampled: false,
    });
    expect(await recorded({ name: 'always_on', ratio: 1 })).toEqual({ root: true, underSampled: true, underUnsampled: true });
    expect(await recorded({ name: 'always_off', ratio: 1 })).toEqual({ root: false, underSampled: false, underUnsampled: false });
    expect(await recorded({ name: 'parentbased_always_off', ratio: 1 })).toEqual({
      root: false,
      underSampled: true,
      underUnsampled: false,
    });
    expect(await recorded({ name: 'traceidratio', ratio: 0 })).toEqual({
      root: false,
      underSampled: false,
      underUnsampled: false,
    });
    expect(await recorded({ name: 'traceidratio', ratio: 1 })).toEqual({ root: true, underSampled: true, underUnsampled: true });
    expect(await recorded({ name: 'parentbased_traceidratio', ratio: 0 })).toEqual({
      root: false,
      underSampled: true,
      underUnsampled: false,
    });
  });
});
