import { Piscina } from 'piscina';
import { deadline } from '../../lib/deadline.ts';
import { DocumentTooComplexError } from './document-errors.ts';
import type { RenderedDocument } from './markdown-pdf.ts';
import { createStopWord, type StopWord, stopRender } from './render-stop.ts';
import type { RenderTask } from './render-worker.ts';

export interface RenderPoolOptions {
  /** Worker threads at most; a render waits for a free one. */
  threads: number;
  /** Wall-clock limit of one render; past it the thread is stopped and the render fails. */
  timeoutMs: number;
}

/**
 * Renders documents in worker threads, so that a large or pathological document never holds the
 * event loop that answers requests and runs jobs. Threads start on first use and stop when idle.
 */
export function createRenderPool(options: RenderPoolOptions) {
  const pool = new Piscina({
    filename: new URL('./render-worker.ts', import.meta.url).href,
    minThreads: 0,
    maxThreads: options.threads,
    idleTimeout: 60_000,
  });
  const seconds = options.timeoutMs / 1000;
  /** The renders running now: each is stopped safely before its thread is terminated (render-stop.ts). */
  const running = new Set<StopWord>();

  /**
   * Piscina terminates a task's thread when the task's signal aborts: that signal follows the render's
   * deadline (or the caller's signal) only once the thread is outside zlib and can no longer enter it.
   */
  async function renderStoppable(task: RenderTask, signal?: AbortSignal): Promise<RenderedDocument> {
    const limit = deadline(options.timeoutMs);
    const stopped = signal ? AbortSignal.any([signal, limit.signal]) : limit.signal;
    const terminate = new AbortController();
    const onStopped = () => void stopRender(task.stop).then(() => terminate.abort(stopped.reason));
    stopped.addEventListener('abort', onStopped, { once: true });
    if (stopped.aborted) onStopped();
    try {
      const { pdf, missingCharacters }: { pdf: Uint8Array; missingCharacters: string[] } = await pool.run(task, {
        signal: terminate.signal,
      });
      // The bytes arrive as a Uint8Array: a Buffer does not keep its class across the thread boundary.
      return { pdf: Buffer.from(pdf.buffer, pdf.byteOffset, pdf.byteLength), missingCharacters };
    } catch (error) {
      if (limit.expired)
        throw new DocumentTooComplexError(
          `The document took longer than ${seconds} s to render and was stopped: make it shorter or simpler`,
        );
      if (signal?.aborted) throw signal.reason;
      // Errors cross the thread boundary as plain errors: keep the worker's message.
      if (error instanceof Error && error.name === 'DocumentTooComplexError') throw new DocumentTooComplexError(error.message);
      throw error;
    } finally {
      limit.clear();
      stopped.removeEventListener('abort', onStopped);
    }
  }

  return {
    async render(title: string, markdown: string, signal?: AbortSignal): Promise<RenderedDocument> {
      // Known before the thread is asked, so that closing the pool stops this render too.
      const stop = createStopWord();
      running.add(stop);
      try {
        // The deadline is the render's: a thread's start (loading the PDF library) does not count.
        await pool.run(null, signal ? { signal } : {}).catch((error: unknown) => {
          throw signal?.aborted ? signal.reason : error;
        });
        return await renderStoppable({ title, markdown, stop }, signal);
      } finally {
        running.delete(stop);
      }
    },

    async close() {
      await Promise.all([...running].map(stopRender));
      await pool.destroy();
    },
  };
}

export type RenderPool = ReturnType<typeof createRenderPool>;
