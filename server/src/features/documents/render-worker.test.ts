import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * Stops threads of the render worker while they compress (as PDFKit does, with `zlib.deflateSync`), in
 * a process of its own: with Node's zlib in the thread, one of the first few stops aborts that whole
 * process ("close before init" in node_zlib.cc).
 */
const STOPS = 40;
const script = `
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
const renderWorker = ${JSON.stringify(new URL('./render-worker.ts', import.meta.url).href)};
const code = \`
  import { parentPort } from 'node:worker_threads';
  import zlib from 'node:zlib';
  await import(\${JSON.stringify(renderWorker)});
  const bytes = Buffer.alloc(64, 1);
  parentPort.postMessage('compressing');
  for (;;) zlib.deflateSync(bytes);
\`;
for (let stop = 0; stop < ${STOPS}; stop++) {
  const worker = new Worker(code, { eval: true, execArgv: ['--input-type=module'] });
  await once(worker, 'message'); // rejects, and the process exits 1, if the thread failed instead
  await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 10));
  await worker.terminate();
}
console.log('stopped ${STOPS} times');
`;

function runAlone(source: string): Promise<{ code: number | null; signal: string | null; output: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, output })));
}

describe('the render worker', () => {
  it('can be stopped while it compresses, again and again, without aborting the process', async () => {
    const { code, signal, output } = await runAlone(script);
    expect({ code, signal, output: output.slice(0, 2000) }).toEqual({
      code: 0,
      signal: null,
      output: `stopped ${STOPS} times\n`,
    });
  }, 60_000);

  it('compresses to the zlib format, which Node reads back', async () => {
    // The module object that PDFKit's require('zlib') returns (an import's named bindings do not follow it).
    const zlib = (await import('node:zlib')).default;
    const native = zlib.deflateSync;
    await import('./render-worker.ts');
    try {
      expect(zlib.deflateSync).not.toBe(native);
      const text = Buffer.from('BT /F1 12 Tf 72 712 Td (Hello) Tj ET\n'.repeat(200));
      const compressed = zlib.deflateSync(text);
      expect(compressed).toBeInstanceOf(Buffer);
      expect(compressed.length).toBeLessThan(text.length / 10);
      expect(zlib.inflateSync(compressed).equals(text)).toBe(true);
      // What else zlib.deflateSync takes: a string, an ArrayBuffer, a level (0 stores; -1 is the default).
      expect(zlib.inflateSync(zlib.deflateSync('ünïcode text')).toString()).toBe('ünïcode text');
      const buffer = new Uint8Array(text).buffer;
      expect(zlib.inflateSync(zlib.deflateSync(buffer)).equals(text)).toBe(true);
      expect(zlib.deflateSync(text, { level: 0 }).length).toBeGreaterThan(text.length);
      expect(zlib.deflateSync(text, { level: -1 }).equals(compressed)).toBe(true);
      expect(zlib.inflateSync(zlib.deflateSync(Buffer.alloc(0))).length).toBe(0);
    } finally {
      zlib.deflateSync = native;
    }
  });
});
