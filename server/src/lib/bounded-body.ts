import type { Dispatcher } from 'undici';

/**
 * An undici response body read whole, or `tooLarge()` thrown (and the connection cut) once it passes
 * `limit` bytes, whether or not it said its length. A body that breaks off throws undici's error.
 */
export async function readBounded(body: Dispatcher.ResponseData['body'], limit: number, tooLarge: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
}

/**
 * An undici response body as a web stream, as it arrives (an event stream), that errors with
 * `tooLarge()` (and cuts the connection) once it passes `limit` bytes. Cancelling it ends the body.
 */
export function readableBounded(
  body: Dispatcher.ResponseData['body'],
  limit: number,
  tooLarge: () => Error,
): ReadableStream<Uint8Array> {
  const chunks = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let length = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) return controller.close();
      length += next.value.length;
      if (length <= limit) return controller.enqueue(next.value);
      body.destroy();
      controller.error(tooLarge());
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}
