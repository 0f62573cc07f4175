import zlib from 'node:zlib';
import { markdownToPdf, type RenderedDocument } from './markdown-pdf.ts';
import { insideZlib, type StopWord } from './render-stop.ts';

/** The stop word of the render this thread runs now (one at a time), if any. */
let currentStop: StopWord | undefined;

/**
 * PDFKit compresses every PDF object with `zlib.deflateSync`. Each of this thread's synchronous zlib
 * calls is marked as inside zlib, so that the pool never terminates the thread there (render-stop.ts).
 * Each thread has its own `node:zlib` module object: the rest of the process is untouched.
 */
const zlibFunctions = zlib as unknown as Record<string, unknown>;
for (const name of Object.keys(zlibFunctions)) {
  const native = zlibFunctions[name];
  if (!name.endsWith('Sync') || typeof native !== 'function') continue;
  zlibFunctions[name] = (...args: unknown[]) => insideZlib(currentStop, () => native.apply(zlib, args));
}

export interface RenderTask {
  title: string;
  markdown: string;
  stop: StopWord;
}

/** Runs `work` as the render whose stop word is `stop`: this thread's zlib calls then answer to it. */
export async function whileRendering<T>(stop: StopWord, work: () => Promise<T>): Promise<T> {
  currentStop = stop;
  try {
    return await work();
  } finally {
    currentStop = undefined;
  }
}

/** Runs in a worker thread of the render pool (render-pool.ts): Markdown in, PDF bytes out; null is a ready check. */
export default async function render(task: RenderTask | null): Promise<RenderedDocument | null> {
  return task && whileRendering(task.stop, () => markdownToPdf(task.title, task.markdown));
}
