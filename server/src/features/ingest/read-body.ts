import type { IncomingMessage } from 'node:http';
import { AppError } from '../../lib/errors.ts';

/**
 * Reads a request body of at most `limit` bytes. A declared Content-Length over the limit is
 * refused before reading; a body without one (chunked, or sent slowly) is refused the moment it
 * passes the limit, so an oversized body is never held in memory. The connection is closed after
 * the 413 rather than drained.
 */
export function readBodyWithLimit(request: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new AppError('payload_too_large', `The body exceeds this webhook's limit of ${limit} bytes`, {
      headers: { connection: 'close' },
    });
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        request.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new AppError('bad_request', 'The request body could not be read', { cause: error }));
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}
