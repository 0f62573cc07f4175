import { Writable } from 'node:stream';
import { pino, type LoggerOptions } from 'pino';

/** A pino logger whose lines a test reads back (`text()` is all of them, joined). */
export function captureLog(options: LoggerOptions) {
  const lines: string[] = [];
  const sink = new Writable({
    write: (chunk, _encoding, done) => {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino(options, sink), lines, text: () => lines.join('') };
}
