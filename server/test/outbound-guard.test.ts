import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';

/** test/setup.ts: a test reaches loopback only, whatever client it uses (documentation addresses here, never sent). */
describe("the tests' outbound guard", () => {
  it('fails node:http, node:net and fetch connections to anything but loopback, before a packet leaves', async () => {
    const viaHttp = new Promise<Error>((resolve) => request('http://192.0.2.10/x').on('error', resolve).end());
    expect((await viaHttp).message).toMatch(/Unexpected outbound connection to 192\.0\.2\.10/);
    const viaNet = new Promise<Error>((resolve) => connect(443, '198.51.100.7').on('error', resolve));
    expect((await viaNet).message).toMatch(/Unexpected outbound connection to 198\.51\.100\.7/);
    await expect(fetch('https://api.resend.example/emails')).rejects.toThrow(
      /Unexpected outbound connection to https:\/\/api\.resend\.example/,
    );
  });

  it('lets loopback through', async () => {
    const refused = new Promise<NodeJS.ErrnoException>((resolve) => connect(1, '127.0.0.1').on('error', resolve));
    expect((await refused).code).toBe('ECONNREFUSED');
  });
});
