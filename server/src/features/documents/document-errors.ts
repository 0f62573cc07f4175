/**
 * Thrown for input that cannot be laid out; its message is what the model sees. A module of its own:
 * the render pool, on the main thread, names it without loading the PDF library the threads use.
 */
export class DocumentTooComplexError extends Error {
  override name = 'DocumentTooComplexError';
}
