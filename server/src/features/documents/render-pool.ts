import { Piscina } from 'piscina';
import { deadline } from '../../lib/deadline.ts';
import { DocumentTooComplexError } from './document-errors.ts';
import type { RenderedDocument } from './markdown-pdf.ts';

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

  return {
    async render(title: string, markdown: string, signal?: AbortSignal): Promise<RenderedDocument> {
      // The deadline is the render's: a thread's start (loading the PDF library) does not count.
      await pool.run(null, signal ? { signal } : {});
      const limit = deadline(options.timeoutMs);
      try {
        const { pdf, missingCharacters }: { pdf: Uint8Array; missingCharacters: string[] } = await pool.run(
          { title, markdown },
          { signal: signal ? AbortSignal.any([signal, limit.signal]) : limit.signal },
        );
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
      }
    },

    close: () => pool.destroy(),
  };
}

export type RenderPool = ReturnType<typeof createRenderPool>;
