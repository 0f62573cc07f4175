import zlib from 'node:zlib';
import { type DeflateOptions, zlibSync } from 'fflate';
import { markdownToPdf, type RenderedDocument } from './markdown-pdf.ts';

/**
 * PDFKit compresses every PDF object with `zlib.deflateSync`. A render past its deadline is stopped by
 * terminating its thread, and a thread terminated while Node's zlib was setting up a stream aborts the
 * whole process on the thread's teardown (Node 24: `Assertion failed: init_done_ && "close before init"`
 * in node_zlib.cc), taking every request and job with it. In this thread the compression is fflate's
 * (the same zlib format, in plain JavaScript), which a termination can stop anywhere. Each thread has its
 * own `node:zlib` module object: the rest of the process keeps Node's.
 */
zlib.deflateSync = ((data: zlib.InputType, options?: zlib.ZlibOptions) => {
  const bytes =
    typeof data === 'string'
      ? Buffer.from(data)
      : ArrayBuffer.isView(data)
        ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
        : new Uint8Array(data);
  // Node's default (-1) is zlib's level 6, as is fflate's.
  const level = options?.level === undefined || options.level < 0 ? 6 : Math.min(options.level, 9);
  const compressed = zlibSync(bytes, { level: level as DeflateOptions['level'] });
  return Buffer.from(compressed.buffer, compressed.byteOffset, compressed.byteLength);
}) as typeof zlib.deflateSync;

/** Runs in a worker thread of the render pool (render-pool.ts): Markdown in, PDF bytes out; null is a ready check. */
export default async function render(task: { title: string; markdown: string } | null): Promise<RenderedDocument | null> {
  return task && markdownToPdf(task.title, task.markdown);
}
