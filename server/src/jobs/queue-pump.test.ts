import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../test/helpers/eventually.ts';
import { startTestBoss } from '../../test/helpers/test-boss.ts';
import { createQueuePump, type FetchedJob, type JobClaim } from './queue-pump.ts';

let boss: PgBoss;
let close: () => Promise<void>;
const logger = pino({ level: 'silent' });

beforeAll(async () => {
  ({ boss, close } = await startTestBoss());
});
afterAll(() => close?.());

/** A handler whose jobs finish when the test says so. */
function controlledHandler() {
  const running = new Map<string, () => void>();
  let most = 0;
  return {
    running,
    most: () => most,
    signals: new Map<string, AbortSignal>(),
    run(job: FetchedJob, { signal }: JobClaim) {
      this.signals.set((job.data as { key: string }).key, signal);
      return new Promise<void>((resolve, reject) => {
        running.set((job.data as { key: string }).key, () => resolve());
        most = Math.max(most, running.size);
        if ((job.data as { fail?: boolean }).fail) reject(new Error('the handler failed'));
      }).finally(() => running.delete((job.data as { key: string }).key));
    },
    finish(key: string) {
      const resolve = running.get(key)!;
      running.delete(key);
      resolve();
    },
  };
}

const state = async (name: string, id: string) => (await boss.getJobById(name, id))?.state;

/** A pump of the queue `name` whose jobs run in `handler`. */
const pumpOf = (
  name: string,
  handler: ReturnType<typeof controlledHandler>,
  options: { concurrency: number; heartbeatSeconds: number; abandonAfterMs?: number; onAbandon?: (job: FetchedJob) => void },
) => createQueuePump({ boss, schema: 'pgboss', name, ...options, run: (job, claim) => handler.run(job, claim), logger });

/**
 * One job of a queue whose jobs expire a second after their fetch, running in a pump of one slot that
 * sends no heartbeat within a test (only the expiry can abort its signal).
 */
async function runningPastItsExpiry(name: string, key: string, options: { abandonAfterMs?: number } = {}) {
  await boss.createQueue(name, { expireInSeconds: 1, retryLimit: 1, retryDelay: 60 });
  const id = (await boss.send(name, { key }))!;
  const handler = controlledHandler();
  const abandoned: string[] = [];
  const onAbandon = (job: FetchedJob) => abandoned.push(job.id);
  const pump = pumpOf(name, handler, { concurrency: 1, heartbeatSeconds: 600, onAbandon, ...options });
  await eventually('the job running', async () => (handler.running.has(key) ? true : undefined));
  return { id, handler, pump, abandoned };
}

describe('queue pump', () => {
  it('runs at most `concurrency` jobs at once, fetches the rest as slots free up, and completes them all', async () => {
    const name = 'pump-concurrency';
    await boss.createQueue(name);
    const ids = await Promise.all(Array.from({ length: 7 }, (_, i) => boss.send(name, { key: `k${i}` })));
    const handler = controlledHandler();
    const pump = pumpOf(name, handler, { concurrency: 3, heartbeatSeconds: 30 });
    try {
      for (let finished = 0; finished < 7; finished++) {
        const key = await eventually('a running job', async () => handler.running.keys().next().value);
        handler.finish(key);
      }
      for (const id of ids)
        await eventually(`job ${id} completed`, async () => ((await state(name, id!)) === 'completed' ? true : undefined));
      expect(handler.most()).toBe(3);
    } finally {
      await pump.stop(1000);
    }
  });

  it('a wake-up fetches at once; one that comes while every slot is busy is served when a slot frees, not at the poll', async () => {
    const name = 'pump-wake';
    await boss.createQueue(name);
    const handler = controlledHandler();
    const pump = pumpOf(name, handler, { concurrency: 1, heartbeatSeconds: 30 });
    try {
      await boss.send(name, { key: 'first' });
      pump.wake();
      await eventually('the first job', async () => (handler.running.has('first') ? true : undefined));
      await boss.send(name, { key: 'second' });
      pump.wake(); // no free slot now
      handler.finish('first');
      await eventually(
        'the second job, long before the poll',
        async () => (handler.running.has('second') ? true : undefined),
        5_000,
      );
      handler.finish('second');
    } finally {
      await pump.stop(1000);
    }
  });

  it('a failed job goes back to pg-boss for its retry', async () => {
    const name = 'pump-failures';
    await boss.createQueue(name, { retryLimit: 1, retryDelay: 60 });
    const failing = await boss.send(name, { key: 'failing', fail: true });
    const handler = controlledHandler();
    const pump = pumpOf(name, handler, { concurrency: 2, heartbeatSeconds: 30 });
    await eventually('the failure recorded for a retry', async () =>
      (await state(name, failing!)) === 'retry' ? true : undefined,
    );
    await pump.stop(50);
  });

  it('stopping hands a running job back to run again at once without spending a retry, at its last attempt too', async () => {
    const name = 'pump-hand-back';
    // No retry at all, and a minute's delay before one: neither applies to a job handed back.
    await boss.createQueue(name, { retryLimit: 0, retryDelay: 60 });
    const id = (await boss.send(name, { key: 'slow' }))!;
    const stopping = controlledHandler();
    const pump = pumpOf(name, stopping, { concurrency: 1, heartbeatSeconds: 30 });
    await eventually('the job running', async () => (stopping.running.has('slow') ? true : undefined));
    expect(await pump.stop(50)).toBe(1);
    const handedBack = (await boss.getJobById(name, id))!;
    expect(handedBack).toMatchObject({ state: 'retry', retryCount: 0, retryLimit: 1 });
    expect(handedBack.startAfter.getTime()).toBeLessThanOrEqual(Date.now());
    expect(JSON.stringify(handedBack.output)).toContain('the worker stopped before the job finished');

    // Another worker takes it as a new attempt, the job's last.
    const next = controlledHandler();
    const attempts: FetchedJob[] = [];
    const other = createQueuePump({
      boss,
      schema: 'pgboss',
      name,
      concurrency: 1,
      heartbeatSeconds: 30,
      logger,
      run: (job, claim) => {
        attempts.push(job);
        return next.run(job, claim);
      },
    });
    try {
      other.wake();
      await eventually('the job running again', async () => (next.running.has('slow') ? true : undefined));
      expect(attempts).toMatchObject([{ id, retryCount: 1, retryLimit: 1 }]);
      // The stopped attempt's late end settles nothing of the running one (stop again: it records what it has).
      stopping.finish('slow');
      await pump.stop(0);
      expect(await state(name, id)).toBe('active');
      next.finish('slow');
      await eventually('the job completed', async () => ((await state(name, id)) === 'completed' ? true : undefined));
    } finally {
      await other.stop(1000);
    }
  });

  it('aborts the signal of a job that runs past its expiry at its expiry, not at a heartbeat', async () => {
    const { id, handler, pump } = await runningPastItsExpiry('pump-expiry', 'slow');
    try {
      const signal = handler.signals.get('slow')!;
      expect(signal.aborted).toBe(false);
      await eventually('its signal aborted', async () => (signal.aborted ? true : undefined), 5000);
      expect(String(signal.reason)).toContain(`job ${id} ran past its expiry`);
      handler.finish('slow');
    } finally {
      await pump.stop(1000);
    }
  });

  it('frees the slot of a job whose handler does not stop at its signal, failing it to its retry; its late end completes nothing', async () => {
    const name = 'pump-abandon';
    const { id: stuck, handler, pump, abandoned } = await runningPastItsExpiry(name, 'stuck', { abandonAfterMs: 200 });
    try {
      // Its handler ignores the signal: the only slot must not stay taken.
      const next = await boss.send(name, { key: 'next' });
      await eventually('its signal aborted', async () => (handler.signals.get('stuck')!.aborted ? true : undefined), 5000);
      await eventually('the stuck job failed to its retry', async () =>
        (await state(name, stuck)) === 'retry' ? true : undefined,
      );
      const output = JSON.stringify((await boss.getJobById(name, stuck))?.output);
      expect(output).toContain(`job ${stuck} ran past its expiry, and its handler did not stop within 200 ms`);
      expect(abandoned).toEqual([stuck]);
      pump.wake();
      await eventually('the next job running in the freed slot', async () => (handler.running.has('next') ? true : undefined));
      expect(handler.running.has('stuck')).toBe(true);
      handler.finish('next');
      await eventually('the next job completed', async () => ((await state(name, next!)) === 'completed' ? true : undefined));
      handler.finish('stuck');
      await pump.stop(1000);
      expect(await state(name, stuck)).toBe('retry');
    } finally {
      await pump.stop(1000);
    }
  });

  it('a handler that stops within its grace after the signal keeps its own outcome', async () => {
    const name = 'pump-abandon-grace';
    const { id, handler, pump, abandoned } = await runningPastItsExpiry(name, 'late', { abandonAfterMs: 60_000 });
    try {
      await eventually('its signal aborted', async () => (handler.signals.get('late')!.aborted ? true : undefined), 5000);
      handler.finish('late');
      await eventually('the job completed by its own end', async () =>
        (await state(name, id)) === 'completed' ? true : undefined,
      );
      expect(abandoned).toEqual([]);
    } finally {
      await pump.stop(1000);
    }
  });

  it("keeps its running jobs' heartbeats fresh, and aborts the signal of a job whose claim is gone, not the others'", async () => {
    const name = 'pump-heartbeats';
    await boss.createQueue(name, { heartbeatSeconds: 10, retryLimit: 1, retryDelay: 60 });
    const [lost, kept] = await Promise.all(['lost', 'kept'].map((key) => boss.send(name, { key })));
    const handler = controlledHandler();
    // Its heartbeat every 150 ms: the jobs were sent with pg-boss's shortest, 10 s.
    const pump = pumpOf(name, handler, { concurrency: 2, heartbeatSeconds: 0.3 });
    try {
      await eventually('both jobs running', async () => (handler.running.size === 2 ? true : undefined));
      const startedOn = (await boss.getJobById(name, lost!))!.startedOn;
      await eventually('a heartbeat after the fetch', async () =>
        (await boss.getJobById(name, lost!))!.heartbeatOn! > startedOn ? true : undefined,
      );
      // Failed elsewhere (pg-boss's monitor, the job past its expiry): this attempt no longer has it.
      await boss.fail(name, lost!, { message: 'job timed out' });
      const signal = handler.signals.get('lost')!;
      await eventually('the lost claim aborted', async () => (signal.aborted ? true : undefined));
      expect(handler.signals.get('kept')!.aborted).toBe(false);
      expect(await state(name, kept!)).toBe('active');
      handler.finish('kept');
      handler.finish('lost');
      await eventually('the kept job completed', async () => ((await state(name, kept!)) === 'completed' ? true : undefined));
      // The cut-off attempt's end completes nothing: the job waits for its retry.
      expect(await state(name, lost!)).toBe('retry');
    } finally {
      await pump.stop(1000);
    }
  });
});
