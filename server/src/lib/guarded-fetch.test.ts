import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendEvents, sendJson, startLoopbackServer } from '../../test/helpers/http.ts';
import { OutboundRefused } from './address-guard.ts';
import { createGuardedFetch, ResponseTooLarge } from './guarded-fetch.ts';

/** The errors an error carries, itself first. */
const causes = (error: unknown): unknown[] => (error instanceof Error ? [error, ...causes(error.cause)] : []);

describe('the guarded fetch (URLs that users give: MCP servers)', () => {
  const openStreamClosed = Promise.withResolvers<void>();
  const seen: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }> = [];
  let server: Awaited<ReturnType<typeof startLoopbackServer>>;
  const loopback = createGuardedFetch({ allowPrivateNetworks: true, connectTimeoutMs: 2_000, maxResponseBytes: 1_000 });
  const publicOnly = createGuardedFetch({ allowPrivateNetworks: false, connectTimeoutMs: 2_000, maxResponseBytes: 1_000 });

  beforeAll(async () => {
    server = await startLoopbackServer((request, response, body) => {
      seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      if (request.url === '/mcp')
        return sendJson(response, 200, { jsonrpc: '2.0', id: 1, result: {} }, { 'mcp-session-id': 's-1' });
      if (request.url === '/events')
        return sendEvents(response, 'event: message\ndata: {"id":1}\n\n', 'event: message\ndata: {"id":2}\n\n', 50);
      if (request.url === '/open-events') {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write('event: message\ndata: {"id":1}\n\n');
        response.on('close', () => openStreamClosed.resolve());
        return;
      }
      if (request.url === '/large') return sendJson(response, 200, { text: 'x'.repeat(2_000) });
      if (request.url === '/large-events')
        return sendEvents(response, `data: ${'x'.repeat(600)}\n\n`, `data: ${'y'.repeat(600)}\n\n`);
      if (request.url === '/moved') {
        response.writeHead(307, { location: '/mcp' });
        return response.end();
      }
      sendJson(response, 404, { error: 'not found' });
    });
  });
  afterAll(async () => {
    await Promise.all([loopback.close(), publicOnly.close()]);
    await server.close();
  });

  it('sends a JSON-RPC request with its headers and body, and hands the answer over whole', async () => {
    const response = await loopback(new URL(`${server.url}/mcp`), {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' }),
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBe('s-1');
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/mcp', body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(seen.at(-1)!.headers.accept).toBe('application/json, text/event-stream');
  });

  it('hands an event stream over as it arrives', async () => {
    const reader = (await loopback(`${server.url}/events`)).body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('event: message\ndata: {"id":1}\n\n');
    const second = await reader.read();
    expect(new TextDecoder().decode(second.value)).toBe('event: message\ndata: {"id":2}\n\n');
    expect((await reader.read()).done).toBe(true);
  });

  it('ends the connection of an event stream the reader cancels', async () => {
    const reader = (await loopback(`${server.url}/open-events`)).body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('event: message\ndata: {"id":1}\n\n');
    await reader.cancel();
    await openStreamClosed.promise;
  });

  it('fails an answer larger than its bound with ResponseTooLarge, whole or streamed', async () => {
    const whole = await loopback(`${server.url}/large`, { method: 'POST', body: '{}' }).catch((error: unknown) => error);
    expect(causes(whole).find((cause) => cause instanceof ResponseTooLarge)).toMatchObject({ limit: 1_000 });
    const reader = (await loopback(`${server.url}/large-events`)).body!.getReader();
    await reader.read();
    await expect(reader.read()).rejects.toBeInstanceOf(ResponseTooLarge);
  });

  it('a form body (an OAuth token request) takes the same guard and bound', async () => {
    const form = await loopback(`${server.url}/mcp`, { method: 'POST', body: new URLSearchParams({ grant_type: 'x' }) });
    expect(await form.json()).toMatchObject({ id: 1 });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', body: 'grant_type=x' });
    const large = await loopback(`${server.url}/large`, { method: 'POST', body: new URLSearchParams({ a: 'b' }) });
    await expect(large.text()).rejects.toBeInstanceOf(ResponseTooLarge);
    await expect(
      publicOnly(`${server.url}/mcp`, { method: 'POST', body: new URLSearchParams({ grant_type: 'x' }) }),
    ).rejects.toBeInstanceOf(OutboundRefused);
  });

  it('follows no redirect', async () => {
    const before = seen.length;
    await expect(loopback(`${server.url}/moved`, { method: 'POST', body: '{}' })).rejects.toThrow(
      new OutboundRefused('redirect to /mcp not followed'),
    );
    expect(seen.slice(before).map((request) => request.url)).toEqual(['/moved']);
  });

  it('refuses a private address, written or resolved, before anything is sent', async () => {
    const before = seen.length;
    await expect(publicOnly(`${server.url}/mcp`, { method: 'POST', body: '{}' })).rejects.toBeInstanceOf(OutboundRefused);
    const resolved = await publicOnly(`${server.url.replace('127.0.0.1', 'localhost')}/mcp`, {
      method: 'POST',
      body: '{}',
    }).catch((error: unknown) => error);
    expect(causes(resolved).some((cause) => cause instanceof OutboundRefused)).toBe(true);
    await expect(publicOnly('file:///etc/passwd')).rejects.toThrow(new OutboundRefused('file: URLs are not fetched'));
    expect(seen.length).toBe(before);
  });

  it('with private networks allowed, still refuses a cloud metadata service', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[fd00:ec2::254]/', 'http://[::ffff:a9fe:a9fe]/']) {
      await expect(loopback(url), url).rejects.toThrow(/is a cloud metadata address, never called/);
    }
  });
});
