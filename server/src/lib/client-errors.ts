import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { AppError } from './errors.ts';

/** What Node's HTTP parser refuses before any route sees the request, as our error codes. */
function clientErrorOf(error: NodeJS.ErrnoException): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request was not received in time');
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('headers_too_large', 'The request line and headers are larger than this server reads');
    default:
      return new AppError('bad_request', 'The request is not valid HTTP');
  }
}

/**
 * Answers what Node's HTTP server reports as a client error (a timeout, headers too large,
 * malformed HTTP) with the API's error body and headers, then closes the connection.
 */
export function createClientErrorHandler(responseHeaders: Record<string, string>) {
  const headerLines = Object.entries(responseHeaders)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const appError = clientErrorOf(error);
      const body = JSON.stringify(appError.toBody());
      socket.write(
        `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\n${headerLines}content-type: application/json; ` +
          `charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
