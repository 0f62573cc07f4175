import nodemailer from 'nodemailer';
import type { Logger } from 'pino';

export interface SystemMail {
  to: string;
  subject: string;
  text: string;
  html?: string;
  idempotencyKey?: string;
}

export interface SystemMailer {
  readonly transport: 'smtp' | 'mail-api' | 'log';
  send(mail: SystemMail): Promise<void>;
}

/**
 * Mail the service itself sends (password resets). SMTP when SMTP_URL is set, the `mail` provider's
 * HTTP API (Resend-compatible POST /emails) when MAIL_API_KEY is set, otherwise a log line so that
 * development needs no mail setup.
 */
export function createSystemMailer(
  options: { smtpUrl?: string; apiKey?: string; apiUrl: string; from: string; logBodies: boolean },
  logger: Logger,
): SystemMailer {
  if (options.smtpUrl) {
    const transporter = nodemailer.createTransport(options.smtpUrl);
    return {
      transport: 'smtp',
      async send(mail) {
        await transporter.sendMail({ from: options.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
      },
    };
  }
  if (options.apiKey) {
    const apiKey = options.apiKey;
    return {
      transport: 'mail-api',
      async send(mail) {
        const response = await fetch(`${options.apiUrl}/emails`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${apiKey}`,
            'content-type': 'application/json',
            ...(mail.idempotencyKey ? { 'idempotency-key': mail.idempotencyKey } : {}),
          },
          body: JSON.stringify({ from: options.from, to: [mail.to], subject: mail.subject, text: mail.text, html: mail.html }),
          signal: AbortSignal.timeout(15_000),
          redirect: 'error',
        });
        if (!response.ok) {
          const detail = (await response.text()).slice(0, 500);
          throw new Error(`Mail provider answered ${response.status}: ${detail}`);
        }
      },
    };
  }
  return {
    transport: 'log',
    async send(mail) {
      // Outside production the log line is the delivery channel; in production it must not carry links.
      const body = options.logBodies ? { text: mail.text } : {};
      logger.warn(
        { mail: { to: mail.to, subject: mail.subject, ...body } },
        'MAIL NOT SENT: set SMTP_URL or MAIL_API_KEY to deliver mail',
      );
    },
  };
}
