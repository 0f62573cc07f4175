import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendEvents, sendJson, startLoopbackServer } from '../../test/helpers/http.ts';
import { createRequestFetch } from './request-fetch.ts';

describe('the request fetch', () => {
  const modelFetch = createRequestFetch();
  const seen: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }> = [];
  let server: Awaited<ReturnType<typeof startLoopbackServer>>;

  beforeAll(async () => {
    server = await startLoopbackServer((request, response, body) => {
      seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      if (request.url === '/v1/chat/completions') {
        return sendJson(response, 200, {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        });
      }
      if (request.url === '/limited')
        return sendJson(response, 429, { error: { message: 'slow down' } }, { 'retry-after': '7', 'set-cookie': 'a=1' });
      if (request.url === '/empty') {
        response.writeHead(204);
        return response.end();
      }
      if (request.url === '/stream') return sendEvents(response, 'data: one\n\n', 'data: two\n\n');
      if (request.url === '/slow') return setTimeout(() => sendJson(response, 200, {}), 5_000);
      if (request.url === '/moved') {
        response.writeHead(302, { location: '/v1/chat/completions' });
        return response.end();
      }
      if (request.url === '/large') return sendJson(response, 200, { text: 'x'.repeat(2_000) });
      if (request.url === '/large-stream')
        return sendEvents(response, `data: ${'x'.repeat(600)}\n\n`, `data: ${'y'.repeat(600)}\n\n`);
      sendJson(response, 404, { error: 'not found' });
    });
  });
  afterAll(() => server.close());

  it("carries the AI SDK's request and its answer, as fetch does", async () => {
    const model = createOpenAICompatible({ name: 'p', baseURL: `${server.url}/v1`, apiKey: 'k-1', fetch: modelFetch });
    const result = await generateText({ model: model.chatModel('m'), prompt: 'Hi' });
    expect(result.text).toBe('Hello there.');
    expect(result.usage.inputTokens).toBe(3);
    const request = seen.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.headers.authorization).toBe('Bearer k-1');
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toMatchObject({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
  });

  it("hands a provider's error over with its status, headers and body", async () => {
    const response = await modelFetch(`${server.url}/limited`, {
      method: 'POST',
      headers: new Headers({ 'x-one': '1' }),
      body: '{}',
    });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await response.json()).toEqual({ error: { message: 'slow down' } });
    expect(seen.at(-1)!.headers['x-one']).toBe('1');

    const model = createOpenAICompatible({ name: 'p', baseURL: `${server.url}/limited#`, fetch: modelFetch });
    const failure = await generateText({ model: model.chatModel('m'), prompt: 'Hi', maxRetries: 0 }).catch((e) => e);
    expect(APICallError.isInstance(failure)).toBe(true);
    expect((failure as APICallError).statusCode).toBe(429);
  });

  it('answers a status without a body with none', async () => {
    const response = await modelFetch(`${server.url}/empty`);
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  it('streams an event stream as it arrives', async () => {
    const response = await modelFetch(`${server.url}/stream`);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: one\n\n');
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe('data: two\n\n');
  });

  it('stops when its signal aborts', async () => {
    const controller = new AbortController();
    const pending = modelFetch(`${server.url}/slow`, { signal: controller.signal });
    controller.abort(new Error('the run stopped'));
    await expect(pending).rejects.toThrow(/the run stopped|aborted/);
  });

  it("fails with the timeout signal's TimeoutError, as fetch does", async () => {
    const failure = await modelFetch(`${server.url}/slow`, { signal: AbortSignal.timeout(50) }).catch((e: Error) => e);
    expect((failure as Error).name).toBe('TimeoutError');
  });

  it('follows a redirect by default, fails on one or returns it, as fetch does', async () => {
    const followed = await modelFetch(`${server.url}/moved`);
    expect(followed.status).toBe(200);
    expect(await followed.json()).toMatchObject({ id: 'chatcmpl-1' });
    await expect(modelFetch(`${server.url}/moved`, { redirect: 'error' })).rejects.toThrow(TypeError);
    const manual = await modelFetch(`${server.url}/moved`, { redirect: 'manual' });
    expect(manual.status).toBe(302);
    expect(manual.headers.get('location')).toBe('/v1/chat/completions');
  });

  it('fails an answer larger than its bound, without holding it', async () => {
    const bounded = createRequestFetch({ maxResponseBytes: 1_000 });
    await expect(bounded(`${server.url}/large`)).rejects.toThrow(TypeError);
    expect((await modelFetch(`${server.url}/large`)).status).toBe(200);
  });

  it('fails an event stream once it passes the bound, with what was read before handed over', async () => {
    const bounded = createRequestFetch({ maxResponseBytes: 1_000, tooLarge: () => new RangeError('over the bound') });
    const reader = (await bounded(`${server.url}/large-stream`)).body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: x{600}/);
    await expect(reader.read()).rejects.toThrow('over the bound');
    const whole = await (await modelFetch(`${server.url}/large-stream`)).text();
    expect(whole).toHaveLength(2 * 608);
  });

  it('refuses a connection the network refuses, as fetch does', async () => {
    await expect(modelFetch('http://127.0.0.1:1/v1/chat/completions', { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
