import type { Logger } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { captureLog } from '../../test/helpers/log-capture.ts';
import { startTestApp, type TestApp } from '../../test/helpers/test-app.ts';
import { loggerOptions } from './logger.ts';
import { deferredRequestLogger } from './request-logger.ts';

const log = captureLog(loggerOptions('info'));
const lines = () => log.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(
    {},
    {
      workers: false,
      logger: log.logger,
      routes: (server) => {
        server.get('/test/warns', async (request) => {
          request.log.warn({ detail: 'kept', body: { password: 'hunter22' } }, 'the route warned');
          return { ok: true };
        });
        server.get('/test/fails', async () => {
          throw new Error('the route failed');
        });
      },
    },
  );
  log.lines.length = 0; // its start's lines
});
afterAll(async () => app?.close());
afterEach(() => {
  log.logger.level = 'info';
  log.lines.length = 0;
});

describe("a request's logger", () => {
  it('writes every line of a request with its id, redacted as any line', async () => {
    expect((await app.request('GET', '/test/warns')).status).toBe(200);
    const written = lines();
    expect(written.map((line) => line.msg)).toEqual(['incoming request', 'the route warned', 'request completed']);
    const ids = new Set(written.map((line) => line.reqId));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^req-/);
    expect(written[1]).toMatchObject({ detail: 'kept', body: { password: '[REDACTED]' } });
  });

  it('writes nothing below the level, and the lines above it with the request id, the level read at each line', async () => {
    log.logger.level = 'warn';
    expect((await app.request('GET', '/auth/methods')).status).toBe(200);
    expect(log.lines).toEqual([]);
    expect((await app.request('GET', '/test/warns')).status).toBe(200);
    expect((await app.request('GET', '/test/fails')).status).toBe(500);
    const written = lines();
    expect(written.map((line) => line.msg)).toEqual(['the route warned', 'unhandled error']);
    expect(written.every((line) => typeof line.reqId === 'string')).toBe(true);
    expect(written[0]!.reqId).not.toBe(written[1]!.reqId);
  });

  it("keeps a route's own level: the probes write no request lines at info", async () => {
    expect((await app.request('GET', '/healthz')).status).toBe(200);
    expect((await app.request('GET', '/auth/methods')).status).toBe(200);
    expect(lines().map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
  });
});

describe('deferredRequestLogger', () => {
  it('makes the pino child on the first line written, once, with the bindings and options given', () => {
    const { logger, lines: written } = captureLog(loggerOptions('warn'));
    const makeChild = logger.child.bind(logger);
    let children = 0;
    logger.child = ((...args: Parameters<typeof makeChild>) => {
      children++;
      return makeChild(...args);
    }) as typeof logger.child;
    const requestLog = deferredRequestLogger(logger)(logger, { reqId: 'req-1' }, {});
    requestLog.info({ a: 1 }, 'below the level');
    requestLog.debug('below the level');
    expect({ children, written }).toEqual({ children: 0, written: [] });
    expect(requestLog.level).toBe('warn');
    requestLog.warn('a %s message', 'formatted');
    requestLog.error({ b: 2 }, 'an error');
    expect(children).toBe(1);
    expect(written.map((line) => JSON.parse(line))).toMatchObject([
      { reqId: 'req-1', msg: 'a formatted message' },
      { reqId: 'req-1', b: 2, msg: 'an error' },
    ]);

    const quieter = deferredRequestLogger(logger)(logger, { reqId: 'req-2' }, { level: 'error' });
    quieter.warn('below the route level');
    expect({ level: quieter.level, children }).toEqual({ level: 'error', children: 1 });
    quieter.level = 'warn';
    quieter.warn('at the level set');
    expect(children).toBe(2);
    expect(JSON.parse(written.at(-1)!)).toMatchObject({ reqId: 'req-2', msg: 'at the level set' });
  });

  it("answers pino's own questions as its child would: levels enabled, bindings, flush", async () => {
    const { logger } = captureLog(loggerOptions('warn'));
    const requestLog = deferredRequestLogger(logger)(logger, { reqId: 'req-3' }, {}) as unknown as Logger;
    expect(['debug', 'info', 'warn', 'error'].map((level) => requestLog.isLevelEnabled(level))).toEqual([
      false,
      false,
      true,
      true,
    ]);
    const quieter = deferredRequestLogger(logger)(logger, { reqId: 'req-4' }, { level: 'error' }) as unknown as Logger;
    expect(quieter.isLevelEnabled('warn')).toBe(false);
    expect(requestLog.bindings()).toEqual({ reqId: 'req-3' });
    await new Promise<void>((resolve, reject) => requestLog.flush((error) => (error ? reject(error) : resolve())));
  });
});
