/**
 * Group commit: writes that arrive while earlier ones are being committed are written together, in
 * one statement whatever their number, with at most `maxInFlight` batches at once (one on PGlite,
 * whose single connection runs one at a time anyway, so batches grow instead). A write resolves once
 * its batch has committed. A batch that fails is written again item by item, so that one bad item
 * fails only its own write. The ingest writer and the action runs' writer share it, and so do reads
 * made by many at once (the routes of the received emails a claim took).
 */
export function createGroupCommit<I, R>(deps: {
  maxInFlight: number;
  maxBatch: number;
  /** Writes the items in one statement (one transaction); returns each item's result, in order. */
  writeBatch: (items: I[]) => Promise<R[]>;
  /** Writes one item alone, after its batch failed. */
  writeAlone: (item: I) => Promise<R>;
  /** Called as a batch starts; what it returns is called once the batch has settled (metrics). */
  onBatch?: (size: number) => () => void;
}) {
  const pending: Array<{ item: I; resolve: (result: R) => void; reject: (error: unknown) => void }> = [];
  let inFlight = 0;
  let scheduled = false;
  const drainers: Array<() => void> = [];

  // A flush waits for the next turn of the event loop, so that every request already being handled
  // joins the batch (PGlite runs statements synchronously; flushing at once would write them singly).
  function scheduleFlush(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flush();
    });
  }

  function flush(): void {
    if (inFlight >= deps.maxInFlight || pending.length === 0) return;
    const batch = pending.splice(0, deps.maxBatch);
    inFlight++;
    const settled = deps.onBatch?.(batch.length);
    deps
      .writeBatch(batch.map(({ item }) => item))
      .then(
        (results) => {
          for (const [index, entry] of batch.entries()) entry.resolve(results[index]!);
        },
        () => Promise.all(batch.map((entry) => deps.writeAlone(entry.item).then(entry.resolve, entry.reject))),
      )
      .finally(() => {
        settled?.();
        inFlight--;
        if (inFlight === 0 && pending.length === 0) for (const resolve of drainers.splice(0)) resolve();
        scheduleFlush();
      });
  }

  return {
    /** Resolves with the item's result once its batch has committed. */
    write(item: I): Promise<R> {
      return new Promise<R>((resolve, reject) => {
        pending.push({ item, resolve, reject });
        scheduleFlush();
      });
    },

    /** Resolves once every write taken so far is committed (or failed). */
    drain(): Promise<void> {
      if (inFlight === 0 && pending.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => drainers.push(resolve));
    },
  };
}
