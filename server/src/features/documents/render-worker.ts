import { markdownToPdf } from './markdown-pdf.ts';

/** Runs in a worker thread of the render pool (render-pool.ts): Markdown in, PDF bytes out. */
export default async function render({ title, markdown }: { title: string; markdown: string }): Promise<Uint8Array> {
  return markdownToPdf(title, markdown);
}
