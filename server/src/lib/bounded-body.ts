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
