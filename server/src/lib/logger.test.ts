import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions, redactUrl } from './logger.ts';

describe('log redaction', () => {
  it('hides OAuth codes and tokens in logged URLs', () => {
    expect(redactUrl('/auth/idp/callback?code=abc&state=def&x=1')).toBe('/auth/idp/callback?code=%5BREDACTED%5D&state=%5BREDACTED%5D&x=1');
    expect(redactUrl('/auth/me')).toBe('/auth/me');
  });

  it('hides passwords, tokens, secrets and auth headers', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write: (chunk, _encoding, done) => {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = pino(loggerOptions('info'), sink);
    logger.info(
      {
        body: { password: 'hunter22', token: 'tok-123', secret: 'whsec_x' },
        req: { headers: { authorization: 'Bearer abc', cookie: 'session=xyz' } },
      },
      'hello',
    );
    const line = lines.join('');
    for (const secret of ['hunter22', 'tok-123', 'whsec_x', 'Bearer abc', 'session=xyz']) expect(line).not.toContain(secret);
    expect(line).toContain('[REDACTED]');
  });

  it('logs a database error without the values of its query, on PGlite as on PostgreSQL', async () => {
    const { PGlite } = await import('@electric-sql/pglite');
    const db = new PGlite();
    const lines: string[] = [];
    const sink = new Writable({
      write: (chunk, _encoding, done) => {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = pino(loggerOptions('info'), sink);
    try {
      // A failing statement whose message does not quote its values (as a constraint's or a cast's may).
      const failure = await db.query('select $1 from no_such_table', ['a-ciphertext-and-hint']).catch((error: unknown) => error);
      logger.error({ err: failure }, 'query failed');
      logger.error({ err: new Error('wrapped', { cause: failure }) }, 'query failed');
    } finally {
      await db.close();
    }
    const line = lines.join('');
    expect(line).toContain('relation \\"no_such_table\\" does not exist');
    expect(line).not.toContain('a-ciphertext-and-hint');
  });
});
