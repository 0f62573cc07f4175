import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { captureLog } from '../../test/helpers/log-capture.ts';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import { loggerOptions, redactUrl } from './logger.ts';

describe('log redaction', () => {
  it('hides OAuth codes and tokens in logged URLs', () => {
    expect(redactUrl('/auth/idp/callback?code=abc&state=def&x=1')).toBe(
      '/auth/idp/callback?code=%5BREDACTED%5D&state=%5BREDACTED%5D&x=1',
    );
    expect(redactUrl('/auth/me')).toBe('/auth/me');
    expect(redactUrl('/x?api_key=k1&client_secret=s1&access_token=t1&id_token=t2&page=2')).toBe(
      '/x?api_key=%5BREDACTED%5D&client_secret=%5BREDACTED%5D&access_token=%5BREDACTED%5D&id_token=%5BREDACTED%5D&page=2',
    );
    expect(redactUrl('/approvals/decide/abcDEF_-123?x=1')).toBe('/approvals/decide/[REDACTED]?x=1');
    // A credential of a recognizable shape in any parameter, which the query's encoding would hide.
    expect(redactUrl('/auth/me?next=postgres://app:pw-leak-1@db/app&note=whsec_LeakLeakLeak123&a=1&a=2')).toBe(
      '/auth/me?next=postgres%3A%2F%2Fapp%3A%5BREDACTED%5D%40db%2Fapp&note=%5BREDACTED%5D&a=1&a=2',
    );
  });

  it('hides passwords, tokens, secrets and auth headers', () => {
    const { logger, text } = captureLog(loggerOptions('info'));
    logger.info(
      {
        body: { password: 'hunter22', token: 'tok-123', secret: 'whsec_x' },
        req: { headers: { authorization: 'Bearer abc', cookie: 'session=xyz', session: 'sess-1', 'x-webhook-token': 'wh-1' } },
        res: { statusCode: 200, headers: { 'set-cookie': 'sid=set-1' } },
      },
      'hello',
    );
    const line = text();
    for (const secret of ['hunter22', 'tok-123', 'whsec_x', 'Bearer abc', 'session=xyz', 'sess-1', 'wh-1', 'sid=set-1'])
      expect(line).not.toContain(secret);
    expect(line).toContain('[REDACTED]');
  });

  it('hides a credential logged at the top level of a line, and keeps the other fields', () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    logger.info({ password: 'hunter22', apiKey: 're_live_123', accessToken: 'xoxb-1', orgId: 'org-1' }, 'top level');
    const line = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    expect(line).toMatchObject({ password: '[REDACTED]', apiKey: '[REDACTED]', accessToken: '[REDACTED]', orgId: 'org-1' });
    expect(line.msg).toBe('top level');
  });

  it('hides a credential at any depth and inside arrays, without changing what the caller logged', () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    const logged = {
      a: { b: { password: 'deep-pass', c: { token: 'deeper-token', kept: 'visible' } } },
      list: [{ apiKey: 're_live_456' }, 'plain', [{ secret: 'nested-secret' }]],
      untouched: { n: 1 },
    };
    const before = structuredClone(logged);
    logger.warn(logged, 'deep');
    const line = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    expect(line).toMatchObject({
      a: { b: { password: '[REDACTED]', c: { token: '[REDACTED]', kept: 'visible' } } },
      list: [{ apiKey: '[REDACTED]' }, 'plain', [{ secret: '[REDACTED]' }]],
      untouched: { n: 1 },
      msg: 'deep',
    });
    expect(logged).toEqual(before);
  });

  it('writes a line whose object refers to itself, and an error as its serializer gives it', () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    const cyclic: Record<string, unknown> = { password: 'cyclic-pass' };
    cyclic.self = cyclic;
    logger.info({ cyclic }, 'cycle');
    expect(lines.at(-1)).not.toContain('cyclic-pass');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ cyclic: { password: '[REDACTED]', self: '[Circular]' } });
    logger.error({ err: new Error('it failed') }, 'failed');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ err: { type: 'Error', message: 'it failed' }, msg: 'failed' });
  });

  it('writes a line nested deeper than the walk follows without failing the call, and without its credentials', () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    let array: unknown = { password: 'deep-array-pass' };
    let object: unknown = { token: 'deep-object-token' };
    for (let level = 0; level < 100_000; level++) {
      array = [array];
      object = { inner: object };
    }
    expect(() => logger.warn({ array, object, res: { statusCode: 200, token: 'res-token' } }, 'hostile')).not.toThrow();
    const line = lines.at(-1)!;
    expect(line).not.toMatch(/deep-array-pass|deep-object-token|res-token/);
    expect(line).toContain('"[Array]"');
    expect(line).toContain('"[Object]"');
    expect(JSON.parse(line)).toMatchObject({ res: { statusCode: 200, token: '[REDACTED]' }, msg: 'hostile' });
  });

  it("hides a credential in an error's own fields and in an instance's, and writes dates and buffers as they are", () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    class ClientError extends Error {
      token: string;
      constructor(message: string, token: string) {
        super(message);
        this.token = token;
      }
    }
    class Account {
      settings: { secret: string; plan: string };
      constructor(settings: { secret: string; plan: string }) {
        this.settings = settings;
      }
    }
    const when = new Date('2026-12-07T05:00:00Z');
    logger.error(
      {
        err: new ClientError('the provider refused', 'err-token-1'),
        error: new ClientError('another', 'err-token-2'),
        account: new Account({ secret: 'instance-secret', plan: 'pro' }),
        when,
        bytes: Buffer.from('ab'),
      },
      'with instances',
    );
    expect(lines.at(-1)).not.toMatch(/err-token|instance-secret/);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      err: { type: 'ClientError', message: 'the provider refused', token: '[REDACTED]' },
      error: { token: '[REDACTED]' },
      account: { settings: { secret: '[REDACTED]', plan: 'pro' } },
      when: when.toISOString(),
      bytes: { type: 'Buffer', data: [97, 98] },
    });
  });

  it('hides a credential whatever its case and separators, and the headers an HTTP client error carries', () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    const failure = Object.assign(new Error('Request failed with status code 401'), {
      config: { url: 'https://api.example/x', headers: { Authorization: 'Bearer client-bearer', 'X-Api-Key': 'client-key' } },
      response: { status: 401, headers: { 'set-cookie': ['sid=client-cookie'] } },
    });
    logger.warn(
      {
        err: failure,
        provider: {
          API_KEY: 'upper-key',
          client_secret: 'snake-secret',
          refreshToken: 'refresh-1',
          privateKey: '-----BEGIN PRIVATE KEY-----',
          webhookSigningSecret: 'whsec_signing',
          Cookie: 'session=cookie-1',
        },
        request: { cookies: { sid: 'parsed-cookie' }, method: 'GET' },
        usage: { inputTokens: 12, outputTokens: 3, maxTokens: 400 },
        key: 'cache-key-1',
        idempotencyKey: 'send-1',
      },
      'spellings',
    );
    const written = lines.at(-1)!;
    for (const secret of [
      'client-bearer',
      'client-key',
      'client-cookie',
      'upper-key',
      'snake-secret',
      'refresh-1',
      'PRIVATE KEY',
      'whsec_signing',
      'cookie-1',
      'parsed-cookie',
    ])
      expect(written).not.toContain(secret);
    expect(JSON.parse(written)).toMatchObject({
      err: {
        message: 'Request failed with status code 401',
        config: { url: 'https://api.example/x', headers: { Authorization: '[REDACTED]', 'X-Api-Key': '[REDACTED]' } },
        response: { status: 401, headers: { 'set-cookie': '[REDACTED]' } },
      },
      provider: { API_KEY: '[REDACTED]', client_secret: '[REDACTED]', Cookie: '[REDACTED]' },
      request: { cookies: '[REDACTED]', method: 'GET' },
      // Counts of tokens, and keys that are not credentials, are written as they are.
      usage: { inputTokens: 12, outputTokens: 3, maxTokens: 400 },
      key: 'cache-key-1',
      idempotencyKey: 'send-1',
    });
  });

  it('hides a credential of a recognizable shape wherever the line carries it, and keeps the line valid JSON', () => {
    const { logger, lines } = captureLog(loggerOptions('info'));
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQ"quoted"\n-----END PRIVATE KEY-----';
    const child = logger.child({ bound: 'Bearer bound-bearer-token' });
    child.error(
      {
        err: new Error('connect ECONNREFUSED postgres://app:db-password@db.internal:5432/app'),
        // Keys that name no credential, holding one.
        key: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La',
        session: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkw.c2lnbmF0dXJl',
        notes: ['re_c1tpEyD8_NKFusih9vKVQknRAQfmF', 'sk-proj-abcdefghijklmnop', 'xoxb-1234567890-abcdefghij', pem],
        // A value that writes itself: its output is not walked by key, but it is by shape.
        config: { toJSON: () => ({ url: 'redis://:redis-password@cache:6379', github: 'ghp_abcdefghijklmnopqrstuvwxyz0123' }) },
        // Look-alikes that are not credentials.
        kept: ['https://example.com/a@b', 'http://localhost:3000', 'disk-usage-monitoring-daemon', 'Bearer short'],
      },
      'the provider answered 401 to Authorization: Bearer msg-bearer-token',
    );
    const written = lines.at(-1)!;
    for (const secret of [
      'bound-bearer-token',
      'db-password',
      'MfKQ9r8GKYqrTwjUPD8ILPZIo2La',
      'eyJzdWIiOiIxMjM0NTY3ODkw',
      'c1tpEyD8',
      'abcdefghijklmnop',
      '1234567890-abcdefghij',
      'MIIEvQ',
      'redis-password',
      'ghp_',
      'msg-bearer-token',
    ])
      expect(written).not.toContain(secret);
    const line = JSON.parse(written) as Record<string, unknown>;
    expect(line).toMatchObject({
      bound: '[REDACTED]',
      err: { message: 'connect ECONNREFUSED postgres://app:[REDACTED]@db.internal:5432/app' },
      key: '[REDACTED]',
      session: '[REDACTED]',
      notes: ['[REDACTED]', '[REDACTED]', '[REDACTED]', '[REDACTED]'],
      config: { url: 'redis://:[REDACTED]@cache:6379', github: '[REDACTED]' },
      kept: ['https://example.com/a@b', 'http://localhost:3000', 'disk-usage-monitoring-daemon', 'Bearer short'],
      msg: 'the provider answered 401 to Authorization: [REDACTED]',
    });
  });

  it('logs a database error without the values of its query, on PGlite as on PostgreSQL', async () => {
    const database = await createTestDatabase();
    const { logger, text } = captureLog(loggerOptions('info'));
    try {
      // A failing statement whose message does not quote its values (as a constraint's or a cast's may).
      const failure = await sql`select ${'a-ciphertext-and-hint'} from no_such_table`
        .execute(database.db)
        .catch((error: unknown) => error);
      logger.error({ err: failure }, 'query failed');
      logger.error({ err: new Error('wrapped', { cause: failure }) }, 'query failed');
    } finally {
      await database.close();
    }
    expect(text()).toContain('relation \\"no_such_table\\" does not exist');
    expect(text()).not.toContain('a-ciphertext-and-hint');
  });
});
