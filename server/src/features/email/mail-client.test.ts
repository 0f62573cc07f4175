import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeMailProvider } from '../../../test/helpers/fake-mail-provider.ts';
import { AttachmentTooLargeError, createMailClient, downloadAttachment, MailProviderError } from './mail-client.ts';

let provider: Awaited<ReturnType<typeof startFakeMailProvider>>;
let client: ReturnType<typeof createMailClient>;
beforeAll(async () => {
  provider = await startFakeMailProvider('re_full_key');
  provider.addKey('re_send_only', { restricted: true });
  client = createMailClient({ baseUrl: provider.url, timeoutMs: 5_000, retries: 1, backoffMs: () => 10 });
});
afterAll(async () => provider?.close());

const message = {
  from: 'Acme Agents <agents@mail.example.com>',
  to: ['ada@customer.example'],
  subject: 'Your order',
  text: 'Shipped.',
};

describe('mail provider client', () => {
  it('sends once per idempotency key; the same key with another body is refused; the sent email has a Message-ID', async () => {
    const mail = client('re_full_key');
    const first = await mail.sendEmail(message, 'tool-call-1');
    expect(await mail.sendEmail(message, 'tool-call-1')).toEqual(first);
    expect(provider.sent.filter((email) => email.idempotencyKey === 'tool-call-1')).toHaveLength(1);
    const other = mail.sendEmail({ ...message, subject: 'Changed' }, 'tool-call-1');
    await expect(other).rejects.toMatchObject({ status: 409, providerName: 'invalid_idempotent_request' });
    expect(await mail.getEmail(first.id)).toMatchObject({ id: first.id, message_id: expect.stringMatching(/^<.+@.+>$/) });
    await expect(mail.getEmail('00000000-0000-0000-0000-000000000000')).rejects.toMatchObject({
      status: 404,
      providerName: 'not_found',
    });
  });

  it('reads a received email with its headers and every attachment (all pages), each with a download URL', async () => {
    const { id, messageId } = provider.receive({
      from: 'Ada <ada@customer.example>',
      to: ['help@mail.example.com'],
      subject: 'Re: Your order',
      text: 'Where is it?',
      headers: { 'in-reply-to': '<abc@email.example>', references: '<abc@email.example>' },
      attachments: [
        { filename: 'invoice.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF-1.7 fake') },
        { filename: 'photo.png', contentType: 'image/png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
      ],
    });
    const mail = client('re_full_key');
    const email = await mail.getReceivedEmail(id);
    expect(email).toMatchObject({ id, message_id: messageId, subject: 'Re: Your order', text: 'Where is it?' });
    expect(email.headers).toMatchObject({ references: '<abc@email.example>' });
    const listed = await mail.listReceivedAttachments(id);
    expect(listed.map((attachment) => attachment.filename)).toEqual(['invoice.pdf', 'photo.png']);
    expect(listed.every((attachment) => attachment.download_url?.startsWith('http'))).toBe(true);
    // Page by page: the same attachments, one request per page.
    const before = provider.requests.length;
    expect((await mail.listReceivedAttachments(id, 1)).map((attachment) => attachment.id)).toEqual(
      listed.map((attachment) => attachment.id),
    );
    expect(provider.requests.slice(before).map((request) => request.url)).toEqual([
      `/emails/receiving/${id}/attachments?limit=1`,
      `/emails/receiving/${id}/attachments?limit=1&after=${listed[0]!.id}`,
    ]);
    const photo = await mail.getReceivedAttachment(id, listed[1]!.id);
    expect(photo).toMatchObject({ filename: 'photo.png', content_type: 'image/png', size: 4, download_url: expect.any(String) });
    expect(Buffer.from(await (await fetch(photo.download_url)).arrayBuffer())).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  });

  it('names what the provider refused: a sending-only key cannot read received mail; a wrong key; a provider that stays down', async () => {
    const { id } = provider.receive({ from: 'a@b.example', to: ['help@mail.example.com'], subject: 'x' });
    await expect(client('re_send_only').getReceivedEmail(id)).rejects.toMatchObject({
      status: 401,
      providerName: 'restricted_api_key',
    });
    expect(await client('re_send_only').sendEmail(message, 'send-only-1')).toEqual({ id: expect.any(String) });
    await expect(client('re_wrong').listDomains()).rejects.toMatchObject({
      status: 403,
      providerName: 'invalid_api_key',
      message: 'API key is invalid',
    });
    provider.failNextRequests(2, 503);
    const down = await client('re_full_key')
      .listDomains()
      .catch((error: unknown) => error);
    expect(down).toBeInstanceOf(MailProviderError);
    expect(down).toMatchObject({ status: 503 });
    const unreachable = createMailClient({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 1_000, retries: 0 });
    const noAnswer = await unreachable('re_full_key')
      .listDomains()
      .catch((error: unknown) => error);
    expect(noAnswer).toMatchObject({ status: 0, providerName: 'unreachable' });
    // Worth another try later: down, unreachable, or the same send in flight; a refusal is final.
    const refused = await client('re_wrong')
      .listDomains()
      .catch((error: MailProviderError) => error);
    expect([down, noAnswer, refused].map((error) => (error as MailProviderError).transient)).toEqual([true, true, false]);
    expect(new MailProviderError(409, 'concurrent_idempotent_requests', 'in flight').transient).toBe(true);
    expect(new MailProviderError(409, 'invalid_idempotent_request', 'another body').transient).toBe(false);
    expect(new MailProviderError(429, 'rate_limit_exceeded', 'slow down').transient).toBe(true);
  });

  it("refuses an API answer that redirects or is not JSON as the provider's answer; one that breaks off is retried, then unreachable", async () => {
    const attempts = new Map<string, number>();
    const api = createServer((request, response) => {
      attempts.set(request.url!, (attempts.get(request.url!) ?? 0) + 1);
      if (request.url === '/emails/moved') return void response.writeHead(302, { location: '/emails/other' }).end();
      if (request.url === '/emails/page')
        return void response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      if (request.url === '/emails/stalled') return; // never answers
      response.writeHead(200, { 'content-type': 'application/json' }).write('{"id":');
      setTimeout(() => response.destroy(), 20);
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    const apiClient = createMailClient({
      baseUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
      timeoutMs: 300,
      retries: 1,
      backoffMs: () => 10,
    })('re_full_key');
    try {
      await expect(apiClient.getEmail('moved')).rejects.toMatchObject({ status: 302, providerName: 'http_302' });
      expect(attempts.get('/emails/moved')).toBe(1);
      expect(attempts.has('/emails/other')).toBe(false);
      await expect(apiClient.getEmail('page')).rejects.toMatchObject({ status: 200, providerName: 'invalid_answer' });
      expect(attempts.get('/emails/page')).toBe(1);
      await expect(apiClient.getEmail('broken')).rejects.toMatchObject({ status: 0, providerName: 'unreachable' });
      expect(attempts.get('/emails/broken')).toBe(2);
      await expect(apiClient.getEmail('stalled')).rejects.toMatchObject({
        status: 0,
        providerName: 'unreachable',
        message: 'The mail provider could not be reached: no answer within 0.3 s',
      });
      expect(attempts.get('/emails/stalled')).toBe(2);
    } finally {
      api.closeAllConnections();
      await new Promise((resolve) => api.close(resolve));
    }
  });

  it('downloads an attachment within its limit, and refuses a longer body, a redirect, a refusal and a stall', async () => {
    // A download host as a provider's storage could answer: the body chunked (no length), or not at all.
    const host = createServer((request, response) => {
      if (request.url === '/moved') return void response.writeHead(302, { location: '/ok' }).end();
      if (request.url === '/gone') return void response.writeHead(410).end();
      if (request.url === '/stall') return void response.writeHead(200).write('a');
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let chunk = 0; chunk < (request.url === '/long' ? 8 : 2); chunk++) response.write(Buffer.alloc(600, chunk));
      response.end();
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
    const limits = { maxBytes: 4096, timeoutMs: 500 };
    try {
      const content = await downloadAttachment(`${base}/ok`, limits);
      expect(content.length).toBe(1200);
      expect(content[1199]).toBe(1);
      await expect(downloadAttachment(`${base}/long`, limits)).rejects.toBeInstanceOf(AttachmentTooLargeError);
      await expect(downloadAttachment(`${base}/moved`, limits)).rejects.toMatchObject({ status: 302 });
      await expect(downloadAttachment(`${base}/gone`, limits)).rejects.toMatchObject({
        status: 410,
        message: 'The attachment download answered 410',
      });
      await expect(downloadAttachment(`${base}/stall`, limits)).rejects.toMatchObject({ status: 0, providerName: 'unreachable' });
      await expect(downloadAttachment('file:///etc/passwd', limits)).rejects.toMatchObject({
        providerName: 'invalid_download_url',
      });
    } finally {
      host.closeAllConnections();
      await new Promise((resolve) => host.close(resolve));
    }
  });
});
