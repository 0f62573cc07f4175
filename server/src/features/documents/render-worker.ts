import { markdownToPdf, type RenderedDocument } from './markdown-pdf.ts';

/** Runs in a worker thread of the render pool (render-pool.ts): Markdown in, PDF bytes out; null is a ready check. */
export default async function render(task: { title: string; markdown: string } | null): Promise<RenderedDocument | null> {
  return task && markdownToPdf(task.title, task.markdown);
}
