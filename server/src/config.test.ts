import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('stops production start-up naming each missing required variable', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/ENCRYPTION_MASTER_KEY, APP_HOST, API_HOST/);
    expect(() =>
      loadConfig({ NODE_ENV: 'production', ENCRYPTION_MASTER_KEY: 'k'.repeat(32), APP_HOST: 'https://app.example' }),
    ).toThrow(/variable API_HOST/);
    const config = loadConfig({
      NODE_ENV: 'production',
      ENCRYPTION_MASTER_KEY: 'k'.repeat(32),
      APP_HOST: 'https://app.example/',
      API_HOST: 'https://api.example',
    });
    expect(config.isProduction).toBe(true);
    expect(config.host).toBe('0.0.0.0');
    expect(config.appHost).toBe('https://app.example');
    // The spec's password hash cost is the default; only an explicit PASSWORD_HASH_COST lowers it.
    expect(config.passwordHashCost).toBe(12);
    expect(() => loadConfig({ PASSWORD_HASH_COST: '3' })).toThrow(/PASSWORD_HASH_COST/);
  });

  it('in development, generates a master key under the data directory once and reuses it', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ap-config-'));
    try {
      const first = loadConfig({ DATA_DIR: dataDir });
      expect(first.notices.join()).toMatch(/Generated a development ENCRYPTION_MASTER_KEY/);
      expect(readFileSync(join(dataDir, 'master.key'), 'utf8').trim()).toBe(first.masterKey);
      expect(statSync(join(dataDir, 'master.key')).mode & 0o777).toBe(0o600);
      const second = loadConfig({ DATA_DIR: dataDir });
      expect(second.masterKey).toBe(first.masterKey);
      expect(second.notices).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('has the documented defaults', () => {
    const config = loadConfig({ ENCRYPTION_MASTER_KEY: 'k'.repeat(32) });
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.apiHost).toBe('http://localhost:3000');
    expect(config.codehost).toBeNull();
    expect(config.idp).toBeNull();
    expect(config.rateLimit.authPerMinute).toBe(10);
    expect(config.ingestWriteConcurrency).toBe(2);
    expect(config.email.batchWindowMs).toBe(250);
    expect(config.worker).toEqual({ niceness: 10, databasePoolSize: 3 });
    expect(config.jobs).toEqual({ pollMs: 2000, heartbeatSeconds: 30 });
    expect(config.shutdownGraceMs).toBe(10_000);
    expect(loadConfig({ ENCRYPTION_MASTER_KEY: 'k'.repeat(32), EMAIL_BATCH_WINDOW_MS: '0' }).email.batchWindowMs).toBe(0);
    expect(loadConfig({ ENCRYPTION_MASTER_KEY: 'k'.repeat(32), SHUTDOWN_GRACE_SECONDS: '2.5' }).shutdownGraceMs).toBe(2500);
  });

  it('rejects bad values with a message naming the variable, and treats empty ones as unset', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL: must be a postgres/);
    expect(() => loadConfig({ ENCRYPTION_MASTER_KEY: 'short' })).toThrow(/ENCRYPTION_MASTER_KEY/);
    expect(() => loadConfig({ INGEST_WRITE_CONCURRENCY: '9' })).toThrow(/INGEST_WRITE_CONCURRENCY/);
    expect(() => loadConfig({ WORKER_NICENESS: '20' })).toThrow(/WORKER_NICENESS/);
    expect(() => loadConfig({ WORKER_NICENESS: '-5' })).toThrow(/WORKER_NICENESS/);
    expect(() => loadConfig({ EMAIL_BATCH_WINDOW_MS: '-1' })).toThrow(/EMAIL_BATCH_WINDOW_MS/);
    expect(() => loadConfig({ WORKER_DATABASE_POOL_SIZE: '0' })).toThrow(/WORKER_DATABASE_POOL_SIZE/);
    // pg-boss refuses a heartbeat under 10 s: at start-up, not when the first job is sent.
    expect(() => loadConfig({ JOB_HEARTBEAT_SECONDS: '5' })).toThrow(/JOB_HEARTBEAT_SECONDS/);
    expect(() => loadConfig({ JOB_HEARTBEAT_SECONDS: '12.5' })).toThrow(/JOB_HEARTBEAT_SECONDS/);
    expect(() => loadConfig({ JOB_HEARTBEAT_SECONDS: '3601' })).toThrow(/JOB_HEARTBEAT_SECONDS/);
    expect(() => loadConfig({ JOB_HEARTBEAT_SECONDS: 'thirty' })).toThrow(/JOB_HEARTBEAT_SECONDS/);
    expect(() => loadConfig({ SHUTDOWN_GRACE_SECONDS: '0' })).toThrow(/SHUTDOWN_GRACE_SECONDS/);
    expect(() => loadConfig({ SHUTDOWN_GRACE_SECONDS: '301' })).toThrow(/SHUTDOWN_GRACE_SECONDS/);
    expect(() => loadConfig({ SHUTDOWN_GRACE_SECONDS: 'ten' })).toThrow(/SHUTDOWN_GRACE_SECONDS/);
    expect(() => loadConfig({ EMAIL_BATCH_WINDOW_MS: '60000' })).toThrow(/EMAIL_BATCH_WINDOW_MS/);
    expect(() => loadConfig({ MODEL_PRICES: 'gpt=1' })).toThrow(/MODEL_PRICES: must be JSON/);
    expect(() => loadConfig({ MODEL_PRICES: '{"gpt":{"input":-1,"output":1}}' })).toThrow(/MODEL_PRICES\.gpt\.input/);
    expect(() => loadConfig({ MODEL_PRICES: '{"gpt":{"input":1}}' })).toThrow(/MODEL_PRICES\.gpt\.output/);
    const prices = loadConfig({
      MODEL_PRICES: '{"gpt-x":{"input":0.15,"output":0.6},"anthropic/claude":{"input":3,"output":15}}',
    }).model.prices;
    expect(prices.get('gpt-x')).toEqual({ input: 0.15, output: 0.6 });
    expect(prices.size).toBe(2);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'no-equals' })).toThrow(/OTEL_EXPORTER_OTLP_HEADERS/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-honeycomb-team=a%3Db,k=v',
    }).tracing;
    expect(tracing).toMatchObject({
      tracesUrl: 'http://collector:4318/v1/traces',
      headers: { 'x-honeycomb-team': 'a=b', k: 'v' },
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing.tracesUrl).toBeNull();
    expect(loadConfig({}).tracing.tracesUrl).toBeNull();
    expect(loadConfig({ ENCRYPTION_MASTER_KEY: 'k'.repeat(32), DATABASE_URL: '' }).databaseUrl).toBeUndefined();
  });

  it('reads OTEL_TRACES_SAMPLER and its ratio as the OpenTelemetry specification does: a bad one is a notice and the default', () => {
    const key = { ENCRYPTION_MASTER_KEY: 'k'.repeat(32) };
    const sampled = (env: Record<string, string>) => {
      const config = loadConfig({ ...key, ...env });
      return { sampler: config.tracing.sampler, notices: config.notices };
    };
    expect(sampled({})).toEqual({ sampler: { name: 'parentbased_always_on', ratio: 1 }, notices: [] });
    expect(sampled({ OTEL_TRACES_SAMPLER: 'ParentBased_TraceIdRatio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toEqual({
      sampler: { name: 'parentbased_traceidratio', ratio: 0.25 },
      notices: [],
    });
    expect(sampled({ OTEL_TRACES_SAMPLER: 'traceidratio' }).sampler).toEqual({ name: 'traceidratio', ratio: 1 });
    // An argument of another sampler is not its business.
    expect(sampled({ OTEL_TRACES_SAMPLER: 'always_off', OTEL_TRACES_SAMPLER_ARG: 'x' })).toEqual({
      sampler: { name: 'always_off', ratio: 1 },
      notices: [],
    });
    const unknown = sampled({ OTEL_TRACES_SAMPLER: 'jaeger_remote' });
    expect(unknown.sampler).toEqual({ name: 'parentbased_always_on', ratio: 1 });
    expect(unknown.notices.join()).toMatch(/OTEL_TRACES_SAMPLER=jaeger_remote is not one of .*parentbased_always_on/);
    for (const ratio of ['1.5', '-0.1', 'half', 'NaN', ' ']) {
      const bad = sampled({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio });
      expect(bad.sampler).toEqual({ name: 'traceidratio', ratio: 1 });
      expect(bad.notices.join()).toMatch(/OTEL_TRACES_SAMPLER_ARG=.* is not a ratio from 0 to 1/);
    }
  });

  it('turns on an OAuth provider only with both client id and secret', () => {
    const key = { ENCRYPTION_MASTER_KEY: 'k'.repeat(32) };
    expect(loadConfig({ ...key, CODEHOST_CLIENT_ID: 'id' }).codehost).toBeNull();
    const both = loadConfig({
      ...key,
      CODEHOST_CLIENT_ID: 'id',
      CODEHOST_CLIENT_SECRET: 'secret',
      API_HOST: 'https://api.example',
    });
    expect(both.codehost?.redirectUri).toBe('https://api.example/auth/codehost/callback');
    expect(loadConfig({ ...key, IDP_CLIENT_ID: 'id', IDP_CLIENT_SECRET: 's' }).idp?.issuer).toBe('https://accounts.google.com');
  });
});
