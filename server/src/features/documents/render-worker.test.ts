import { spawn } from 'node:child_process';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createRenderPool } from './render-pool.ts';
import { createStopWord, stopRender } from './render-stop.ts';

/**
 * Stops threads of the render worker while they compress (as PDFKit does, with `zlib.deflateSync`), as
 * the pool stops a render, in a process of its own: a thread terminated inside Node's zlib aborts that
 * whole process ("close before init" in node_zlib.cc), within the first few of such stops.
 */
const STOPS = 40;
const renderStop = new URL('./render-stop.ts', import.meta.url).href;
const script = `
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { createStopWord, stopRender } from ${JSON.stringify(renderStop)};
const renderWorker = ${JSON.stringify(new URL('./render-worker.ts', import.meta.url).href)};
const code = \`
  import { parentPort, workerData } from 'node:worker_threads';
  import zlib from 'node:zlib';
  const { whileRendering } = await import(\${JSON.stringify(renderWorker)});
  const bytes = Buffer.alloc(64, 1);
  await whileRendering(workerData, async () => {
    parentPort.postMessage('compressing');
    for (;;) zlib.deflateSync(bytes);
  }).catch((error) => parentPort.postMessage(error.message));
\`;
for (let stop = 0; stop < ${STOPS}; stop++) {
  const word = createStopWord();
  const worker = new Worker(code, { eval: true, execArgv: ['--input-type=module'], workerData: word });
  await once(worker, 'message'); // rejects, and the process exits 1, if the thread failed instead
  await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 10));
  await stopRender(word);
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

  it("answers a render's stop in its zlib calls, and leaves zlib as it is outside a render", async () => {
    // The module object that PDFKit's require('zlib') returns (an import's named bindings do not follow it).
    const nativeSync = Object.fromEntries(Object.entries(zlib).filter(([name]) => name.endsWith('Sync'))) as {
      deflateSync: typeof zlib.deflateSync;
    };
    const { whileRendering } = await import('./render-worker.ts');
    try {
      const text = Buffer.from('BT /F1 12 Tf 72 712 Td (Hello) Tj ET\n'.repeat(200));
      const word = createStopWord();
      await whileRendering(word, async () => {
        // Node's own compression, byte for byte, while the render runs.
        expect(zlib.deflateSync(text).equals(nativeSync.deflateSync(text))).toBe(true);
        expect(zlib.inflateSync(zlib.deflateSync(text, { level: 1 })).equals(text)).toBe(true);
        await stopRender(word);
        expect(() => zlib.deflateSync(text)).toThrow('The render was stopped');
        expect(() => zlib.gzipSync(text)).toThrow('The render was stopped');
      });
      // Outside a render (this thread's other work), no stop applies.
      expect(zlib.inflateSync(zlib.deflateSync(text)).equals(text)).toBe(true);
    } finally {
      Object.assign(zlib, nativeSync);
    }
  });

  const longListing = `\`\`\`\n${Array.from({ length: 60_000 }, (_, i) => `line ${i} of a long listing`).join('\n')}\n\`\`\``;

  it("stops a render when its caller's signal aborts, at whatever point it is, and renders the next", async () => {
    const pool = createRenderPool({ threads: 1, timeoutMs: 60_000 });
    try {
      for (const afterMs of [0, 50, 400]) {
        const caller = new AbortController();
        const gone = new Error('the caller is gone');
        setTimeout(() => caller.abort(gone), afterMs);
        await expect(pool.render('Long', longListing, caller.signal)).rejects.toBe(gone);
      }
      const { pdf } = await pool.render('Short', 'fine');
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('fails the renders asked for when the pool closes, and closing ends', async () => {
    const pool = createRenderPool({ threads: 2, timeoutMs: 60_000 });
    const outcomes = [pool.render('Long', longListing), pool.render('Long too', longListing)].map((rendering) =>
      rendering.then(
        () => 'rendered',
        () => 'failed',
      ),
    );
    await pool.close();
    expect(await Promise.all(outcomes)).toEqual(['failed', 'failed']);
  }, 60_000);
});
