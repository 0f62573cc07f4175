/**
 * Stopping a render thread safely. A render past its deadline is stopped by terminating its thread, and
 * Node (24) aborts the whole process when a thread is terminated while its zlib sets up a stream
 * (`Assertion failed: init_done_ && "close before init"` in node_zlib.cc, on the thread's teardown),
 * taking every request and job with it. PDFKit compresses every PDF object with `zlib.deflateSync`.
 *
 * So each render carries a stop word shared by the pool and the thread: the thread enters zlib only
 * while its render runs, and marks that it is inside; the pool marks the render stopped only while the
 * thread is outside, and terminates the thread only then. Once marked, the thread cannot enter zlib again.
 */
const RUNNING = 0;
const IN_ZLIB = 1;
const STOPPED = 2;

export type StopWord = Int32Array;

export const createStopWord = (): StopWord => new Int32Array(new SharedArrayBuffer(4));

/** The thread's side: runs a zlib call unless its render was stopped, in which case it throws. */
export function insideZlib<T>(word: StopWord | undefined, call: () => T): T {
  if (!word) return call();
  if (Atomics.compareExchange(word, 0, RUNNING, IN_ZLIB) !== RUNNING) throw new Error('The render was stopped');
  try {
    return call();
  } finally {
    Atomics.store(word, 0, RUNNING);
    Atomics.notify(word, 0);
  }
}

/** The pool's side: resolves once the render is marked stopped, outside zlib; its thread may then be terminated. */
export async function stopRender(word: StopWord): Promise<void> {
  // A zlib call is a few milliseconds at most: wait for it to end, without holding the event loop.
  while (Atomics.compareExchange(word, 0, RUNNING, STOPPED) === IN_ZLIB) {
    const wait = Atomics.waitAsync(word, 0, IN_ZLIB);
    if (wait.async) await wait.value;
  }
}
