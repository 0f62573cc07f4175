import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createConsoleSite } from './console-site.ts';

const dist = mkdtempSync(join(tmpdir(), 'console-dist-'));
afterAll(() => rmSync(dist, { recursive: true, force: true }));

/** A build of the console: its page naming its hashed script, and the script. */
function build(hash: string) {
  rmSync(join(dist, 'assets'), { recursive: true, force: true });
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'assets', `index-${hash}.js`), `console.log('${hash}')`);
  writeFileSync(
    join(dist, 'index.html'),
    `<!doctype html><meta name="csp-nonce" content="__CSP_NONCE__"><script type="module" src="/assets/index-${hash}.js"></script>`,
  );
}

describe('the console site', () => {
  it('serves the page of the build on disk now: a build while the server runs does not leave it naming assets that are gone', async () => {
    build('first');
    const site = createConsoleSite(dist)!;
    const app = Fastify();
    await app.register(site.assets);
    app.get('/*', (_request, reply) => site.sendPage(reply));
    try {
      const before = await app.inject({ url: '/ledger' });
      expect(before.body).toContain('/assets/index-first.js');
      expect(before.headers['content-security-policy']).toContain(`'nonce-${before.body.match(/content="([^"]+)"/)![1]}'`);

      build('second');
      const after = await app.inject({ url: '/ledger' });
      expect(after.body).toContain('/assets/index-second.js');
      expect((await app.inject({ url: '/assets/index-second.js' })).statusCode).toBe(200);

      // While a build has the page missing, the last one read is served.
      rmSync(join(dist, 'index.html'));
      expect((await app.inject({ url: '/ledger' })).body).toContain('/assets/index-second.js');
    } finally {
      await app.close();
    }
  });
});
