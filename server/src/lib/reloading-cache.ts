import type { Clock } from './clock.ts';
import { INVALIDATE_ALL } from './process-bus.ts';

/** Loads the values of keys not in the cache (or past their lifetime); a key it leaves out has none. */
export type LoadMany<T> = (keys: string[]) => Promise<ReadonlyMap<string, T>>;

/**
 * Configuration read on hot paths (ingest's webhooks, the mail intake's inboxes), kept a short while
 * and dropped at once in every process when the console changes it (the caller subscribes to the
 * bus and calls `invalidate`). A key with no value is kept too, more briefly, so that a flood of
 * unknown keys costs no queries.
 *
 * An entry past its lifetime is still answered while one reload of it runs (for at most another
 * lifetime): entries loaded together expire together, and their requests should not all wait on the
 * database at that moment. Concurrent loads of one key share one query; the keys a `getMany` misses
 * are loaded together.
 */
export function createReloadingCache<T>(deps: { clock: Clock; ttlMs: number; missTtlMs?: number; maxEntries?: number }) {
  const missTtlMs = Math.min(deps.ttlMs, deps.missTtlMs ?? 5_000);
  const maxEntries = deps.maxEntries ?? 10_000;
  const entries = new Map<string, { value: T | null; freshUntil: number; staleUntil: number }>();
  const loads = new Map<string, { generation: number; promise: Promise<T | null> }>();
  // Bumped by every invalidation: a load that began before one neither stores nor is shared after it.
  let generation = 0;

  function store(key: string, value: T | null): void {
    if (entries.size >= maxEntries && !entries.has(key)) entries.delete(entries.keys().next().value!);
    const lifetime = value === null ? missTtlMs : deps.ttlMs;
    const now = deps.clock.now().getTime();
    entries.set(key, { value, freshUntil: now + lifetime, staleUntil: now + 2 * lifetime });
  }

  /** The running load of each key, started (one query for those not loading already) where none runs. */
  function reload(keys: string[], loadMany: LoadMany<T>): Array<Promise<T | null>> {
    const startedAt = generation;
    const missing = keys.filter((key) => loads.get(key)?.generation !== startedAt);
    if (missing.length > 0) {
      const loaded = loadMany(missing).then((values) => {
        if (generation === startedAt) for (const key of missing) store(key, values.get(key) ?? null);
        return values;
      });
      for (const key of missing) {
        const promise: Promise<T | null> = loaded
          .then((values) => values.get(key) ?? null)
          .finally(() => {
            if (loads.get(key)?.promise === promise) loads.delete(key);
          });
        loads.set(key, { generation: startedAt, promise });
      }
    }
    return keys.map((key) => loads.get(key)!.promise);
  }

  async function getMany(keys: string[], loadMany: LoadMany<T>): Promise<Map<string, T | null>> {
    const now = deps.clock.now().getTime();
    const found = new Map<string, T | null>();
    const toWaitFor: string[] = [];
    const toRefresh: string[] = [];
    for (const key of new Set(keys)) {
      const hit = entries.get(key);
      if (hit && hit.freshUntil > now) found.set(key, hit.value);
      else if (hit && hit.staleUntil > now) {
        found.set(key, hit.value);
        toRefresh.push(key);
      } else toWaitFor.push(key);
    }
    // A failed refresh leaves the entries as they are; a request after their stale time waits for a load.
    if (toRefresh.length > 0) for (const refresh of reload(toRefresh, loadMany)) refresh.catch(() => undefined);
    if (toWaitFor.length > 0) {
      const values = await Promise.all(reload(toWaitFor, loadMany));
      for (const [index, key] of toWaitFor.entries()) found.set(key, values[index]!);
    }
    return found;
  }

  return {
    getMany,

    async get(key: string, load: () => Promise<T | null>): Promise<T | null> {
      const hit = entries.get(key);
      if (hit && hit.freshUntil > deps.clock.now().getTime()) return hit.value;
      const found = await getMany([key], async () => {
        const value = await load();
        return new Map(value === null ? [] : [[key, value]]);
      });
      return found.get(key) ?? null;
    },

    /** Drops what a change made stale: its own key, the entries `isStale` picks, or every one (INVALIDATE_ALL). */
    invalidate(changed: string, isStale?: (key: string, value: T | null) => boolean): void {
      generation++;
      if (changed === INVALIDATE_ALL) entries.clear();
      else if (!isStale) entries.delete(changed);
      else for (const [key, entry] of entries) if (isStale(key, entry.value)) entries.delete(key);
    },
  };
}

export type ReloadingCache<T> = ReturnType<typeof createReloadingCache<T>>;
