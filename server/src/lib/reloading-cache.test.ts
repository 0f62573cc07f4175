import { describe, expect, it } from 'vitest';
import { TestClock } from '../../test/helpers/clock.ts';
import { INVALIDATE_ALL } from './process-bus.ts';
import { createReloadingCache, type LoadMany } from './reloading-cache.ts';

const TTL_MS = 1_000;

/** A loader over a map that records the keys of each call; `hold` keeps its answers until released. */
function recordingLoader(values: Map<string, string>) {
  const calls: string[][] = [];
  let held: Array<() => void> | null = null;
  const load: LoadMany<string> = async (keys) => {
    calls.push(keys);
    const answer = new Map(keys.filter((key) => values.has(key)).map((key) => [key, values.get(key)!]));
    if (held) await new Promise<void>((resolve) => held!.push(resolve));
    return answer;
  };
  return {
    load,
    calls,
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = null;
      for (const resolve of waiting) resolve();
    },
  };
}

describe('reloading cache', () => {
  const newCache = (clock = new TestClock()) => ({
    clock,
    cache: createReloadingCache<string>({ clock, ttlMs: TTL_MS, missTtlMs: 200 }),
  });

  it('loads the keys it misses in one call, keeps known and unknown ones, and reads neither again while fresh', async () => {
    const { cache } = newCache();
    const loader = recordingLoader(new Map([['a', 'A']]));
    const first = await cache.getMany(['a', 'b', 'a'], loader.load);
    expect([...first]).toEqual([
      ['a', 'A'],
      ['b', null],
    ]);
    expect(loader.calls).toEqual([['a', 'b']]);
    const second = await cache.getMany(['b', 'a'], loader.load);
    expect(second.get('a')).toBe('A');
    expect(second.get('b')).toBeNull();
    expect(loader.calls).toHaveLength(1);
  });

  it('shares a running load among concurrent callers, and loads only the keys none loads yet', async () => {
    const { cache } = newCache();
    const loader = recordingLoader(
      new Map([
        ['a', 'A'],
        ['b', 'B'],
      ]),
    );
    loader.hold();
    const together = Promise.all([
      cache.getMany(['a'], loader.load),
      cache.getMany(['a', 'b'], loader.load),
      cache.get('a', async () => 'never'),
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    loader.release();
    const [first, second, single] = await together;
    expect(first.get('a')).toBe('A');
    expect(second.get('b')).toBe('B');
    expect(single).toBe('A');
    expect(loader.calls).toEqual([['a'], ['b']]);
  });

  it('answers an expired entry while one reload runs; a missing value is kept for its own shorter time', async () => {
    const { cache, clock } = newCache();
    const values = new Map([['a', 'A']]);
    const loader = recordingLoader(values);
    await cache.getMany(['a', 'gone'], loader.load);
    values.set('a', 'A2');
    values.set('gone', 'here');

    clock.advance(300);
    // The miss is past its 200 ms but within twice that: answered as it was while it reloads.
    expect((await cache.getMany(['a', 'gone'], loader.load)).get('gone')).toBeNull();
    expect(loader.calls.at(-1)).toEqual(['gone']);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await cache.getMany(['gone'], loader.load)).get('gone')).toBe('here');

    clock.advance(TTL_MS);
    expect((await cache.getMany(['a'], loader.load)).get('a')).toBe('A');
    await new Promise((resolve) => setImmediate(resolve));
    expect((await cache.getMany(['a'], loader.load)).get('a')).toBe('A2');

    // Past twice its lifetime, a request waits for the load.
    values.set('a', 'A3');
    clock.advance(2 * TTL_MS + 1);
    expect((await cache.getMany(['a'], loader.load)).get('a')).toBe('A3');
  });

  it('a failed load fails its callers and is not kept; the next request loads again', async () => {
    const { cache } = newCache();
    let fail = true;
    const load: LoadMany<string> = async () => {
      if (fail) throw new Error('database gone');
      return new Map([['a', 'A']]);
    };
    await expect(cache.getMany(['a'], load)).rejects.toThrow('database gone');
    fail = false;
    expect((await cache.getMany(['a'], load)).get('a')).toBe('A');
  });

  it('a load that began before an invalidation is neither kept nor shared after it', async () => {
    const { cache } = newCache();
    const values = new Map([['a', 'old']]);
    const loader = recordingLoader(values);
    loader.hold();
    const before = cache.getMany(['a'], loader.load);
    await new Promise((resolve) => setImmediate(resolve));
    values.set('a', 'new');
    cache.invalidate('a');
    const after = cache.getMany(['a'], loader.load);
    await new Promise((resolve) => setImmediate(resolve));
    loader.release();
    expect((await before).get('a')).toBe('old');
    expect((await after).get('a')).toBe('new');
    expect((await cache.getMany(['a'], loader.load)).get('a')).toBe('new');
    expect(loader.calls).toEqual([['a'], ['a']]);
  });

  it('drops one key, the keys a predicate picks, or all', async () => {
    const { cache } = newCache();
    const values = new Map([
      ['x 1', '1'],
      ['x 2', '2'],
      ['y', 'y'],
    ]);
    const loader = recordingLoader(values);
    const keys = ['x 1', 'x 2', 'y'];
    await cache.getMany(keys, loader.load);
    cache.invalidate('y');
    await cache.getMany(keys, loader.load);
    cache.invalidate('x', (key) => key.startsWith('x '));
    await cache.getMany(keys, loader.load);
    cache.invalidate(INVALIDATE_ALL);
    await cache.getMany(keys, loader.load);
    expect(loader.calls).toEqual([keys, ['y'], ['x 1', 'x 2'], keys]);
  });
});
