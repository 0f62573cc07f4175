import { pino } from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeMailProvider } from '../../test/helpers/fake-mail-provider.ts';
import { captureLog } from '../../test/helpers/log-capture.ts';
import { createSystemMailer } from './system-mailer.ts';

const silent = pino({ level: 'silent' });
const mail = {
  to: 'someone@example.com',
  subject: 'Reset your password',
  text: 'Open https://app.example/reset-password?token=abc',
};

describe('system mailer over SMTP', () => {
  const received: string[] = [];
  let smtp: SMTPServer;
  let port = 0;
  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, _session, callback) {
        let data = '';
        stream.on('data', (chunk: Buffer) => (data += chunk.toString()));
        stream.on('end', () => {
          received.push(data);
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    port = (smtp.server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

  it('delivers through nodemailer to the SMTP server of SMTP_URL', async () => {
    const mailer = createSystemMailer(
      {
        smtpUrl: `smtp://127.0.0.1:${port}`,
        apiUrl: 'http://unused',
        from: 'Agent Platform <no-reply@example.com>',
        logBodies: false,
      },
      silent,
    );
    expect(mailer.transport).toBe('smtp');
    await mailer.send(mail);
    expect(received).toHaveLength(1);
    expect(received[0]).toContain('Subject: Reset your password');
    expect(received[0]).toContain('To: someone@example.com');
    expect(received[0]).toContain('reset-password?token=abc');
  });
});

describe('system mailer over the mail provider API', () => {
  it('posts to /emails with the API key and the idempotency key, and throws on a provider error', async () => {
    const provider = await startFakeMailProvider('re_key');
    try {
      const mailer = createSystemMailer(
        { apiKey: 're_key', apiUrl: provider.url, from: 'Agent Platform <no-reply@example.com>', logBodies: false },
        silent,
      );
      await mailer.send({ ...mail, idempotencyKey: 'reset-1' });
      expect(provider.sent[0]).toMatchObject({
        to: ['someone@example.com'],
        subject: 'Reset your password',
        idempotencyKey: 'reset-1',
      });
      provider.failNextRequests(1);
      await expect(mailer.send(mail)).rejects.toThrow(/answered 500/);
      const wrongKey = createSystemMailer(
        { apiKey: 'wrong', apiUrl: provider.url, from: 'x@example.com', logBodies: false },
        silent,
      );
      await expect(wrongKey.send(mail)).rejects.toThrow(/answered 403/);
    } finally {
      await provider.close();
    }
  });
});

describe('system mailer without a transport', () => {
  it('logs the mail; the body only outside production', async () => {
    for (const logBodies of [true, false]) {
      const { logger, text } = captureLog({ level: 'info' });
      await createSystemMailer({ apiUrl: 'http://unused', from: 'x@example.com', logBodies }, logger).send(mail);
      expect(text()).toContain('MAIL NOT SENT');
      expect(text().includes('token=abc')).toBe(logBodies);
    }
  });
});
