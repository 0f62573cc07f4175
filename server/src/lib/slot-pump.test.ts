import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSlotPump } from './slot-pump.ts';

/** A queue of `waiting` items the pump takes from; each take is recorded with what it took. */
function queue() {
  const takes: number[][] = [];
  let waiting: number[] = [];
  let nextItem = 1;
  return {
    takes,
    commit: (count: number) => {
      for (let n = 0; n < count; n++) waiting.push(nextItem++);
    },
    take: async (free: number) => {
      const taken = waiting.slice(0, free);
      waiting = waiting.slice(free);
      takes.push(taken);
      return taken;
    },
  };
}

/** A pump of 10 slots over `work`, polling only after a minute (the tests wake it). */
const pumpOver = (work: ReturnType<typeof queue>, gatherMs?: number) => {
  const pump = createSlotPump({
    concurrency: 10,
    pollMs: 60_000,
    gatherMs,
    take: work.take,
    run: async () => {},
    onTakeError: () => {},
  });
  pump.start();
  return pump;
};

describe('slot pump', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('takes at once when woken, without a gathering window', async () => {
    const work = queue();
    const pump = pumpOver(work);
    await vi.advanceTimersByTimeAsync(0);
    work.commit(1);
    pump.wake();
    await vi.advanceTimersByTimeAsync(0);
    work.commit(1);
    pump.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(work.takes).toEqual([[], [1], [2]]);
    await pump.stop(0);
  });

  it('with gatherMs, takes what was committed during the window in one take, at its end', async () => {
    const work = queue();
    const pump = pumpOver(work, 250);
    await vi.advanceTimersByTimeAsync(0);
    expect(work.takes).toEqual([[]]); // the first look, at start
    for (let n = 0; n < 3; n++) {
      work.commit(1);
      pump.wake();
      await vi.advanceTimersByTimeAsync(100);
    }
    // The window opened by the first wake-up ended at 250 ms, after the third commit (200 ms).
    expect(work.takes).toEqual([[], [1, 2, 3]]);
    // The next wake-up opens a new window.
    work.commit(2);
    pump.wake();
    await vi.advanceTimersByTimeAsync(249);
    expect(work.takes).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(work.takes).toEqual([[], [1, 2, 3], [4, 5]]);
    await pump.stop(0);
  });

  it('does not take after stopping, even when a window was open', async () => {
    const work = queue();
    const pump = pumpOver(work, 250);
    await vi.advanceTimersByTimeAsync(0);
    work.commit(1);
    pump.wake();
    await pump.stop(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(work.takes).toEqual([[]]);
  });

  it('takes nothing before it starts, and takes again when started after a stop', async () => {
    const work = queue();
    const pump = createSlotPump({ concurrency: 10, pollMs: 1_000, take: work.take, run: async () => {}, onTakeError: () => {} });
    work.commit(1);
    pump.wake();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(work.takes).toEqual([]);
    pump.start();
    await vi.advanceTimersByTimeAsync(0);
    await pump.stop(0);
    work.commit(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(work.takes).toEqual([[1]]);
    pump.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(work.takes).toEqual([[1], [2]]);
    await pump.stop(0);
  });

  it('says whether it takes the work it is woken for: not before it starts, nor while it is behind', async () => {
    const work = queue();
    const finishRuns: Array<() => void> = [];
    const pump = createSlotPump({
      concurrency: 2,
      pollMs: 60_000,
      take: work.take,
      run: () => new Promise<void>((resolve) => finishRuns.push(resolve)),
      onTakeError: () => {},
    });
    expect(pump.wake()).toBe(false);
    pump.start();
    await vi.advanceTimersByTimeAsync(0);
    work.commit(3);
    expect(pump.wake()).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    // Its take came back full (2 of 3): more may be waiting, so others should be told of new work.
    expect(work.takes).toEqual([[], [1, 2]]);
    expect(pump.wake()).toBe(false);
    // A freed slot takes the third at once; that take was not full, so it is not behind any more.
    finishRuns.shift()!();
    await vi.advanceTimersByTimeAsync(0);
    expect(work.takes.at(-1)).toEqual([3]);
    finishRuns.shift()!();
    await vi.advanceTimersByTimeAsync(0);
    expect(pump.wake()).toBe(true);
    for (const finish of finishRuns) finish();
    await pump.stop(0);
    expect(pump.wake()).toBe(false);
  });
});
