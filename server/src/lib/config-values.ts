import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { randomToken } from './crypto.ts';
import { TRACES_SAMPLERS, type TracesSampler, type TracingConfig } from './tracing.ts';

/** Values of the configuration that take more than a schema to read (config.ts reads the environment). */
export function parseTrustProxy(value: string | undefined): boolean | number | string[] {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** In development the first start creates a master key under the data directory and reuses it. */
export function developmentMasterKey(dataDir: string, notices: string[]): string {
  const keyFile = join(dataDir, 'master.key');
  if (existsSync(keyFile)) return readFileSync(keyFile, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomToken(32);
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  notices.push(`Generated a development ENCRYPTION_MASTER_KEY in ${keyFile}. Set ENCRYPTION_MASTER_KEY yourself in production.`);
  return key;
}

/** Tracing, by the OpenTelemetry SDK's standard variables (OTEL_*). */
export function tracingConfig(
  e: {
    OTEL_SDK_DISABLED: boolean;
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
    OTEL_EXPORTER_OTLP_ENDPOINT?: string;
    OTEL_EXPORTER_OTLP_HEADERS?: Record<string, string>;
    OTEL_SERVICE_NAME: string;
    OTEL_RECORD_CONTENT: boolean;
    OTEL_TRACES_SAMPLER?: string;
    OTEL_TRACES_SAMPLER_ARG?: string;
    OTEL_BSP_MAX_QUEUE_SIZE: number;
    OTEL_BSP_SCHEDULE_DELAY: number;
    OTEL_BSP_EXPORT_TIMEOUT: number;
  },
  notices: string[],
): TracingConfig {
  return {
    tracesUrl: e.OTEL_SDK_DISABLED ? null : tracesUrl(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, e.OTEL_EXPORTER_OTLP_ENDPOINT),
    headers: e.OTEL_EXPORTER_OTLP_HEADERS ?? {},
    serviceName: e.OTEL_SERVICE_NAME,
    recordContent: e.OTEL_RECORD_CONTENT,
    sampler: tracesSampler(e.OTEL_TRACES_SAMPLER, e.OTEL_TRACES_SAMPLER_ARG, notices),
    maxQueueSize: e.OTEL_BSP_MAX_QUEUE_SIZE,
    scheduledDelayMs: e.OTEL_BSP_SCHEDULE_DELAY,
    exportTimeoutMs: e.OTEL_BSP_EXPORT_TIMEOUT,
  };
}

/** The OTLP/HTTP traces URL: the signal's own endpoint as given, or the base endpoint's /v1/traces (the OTLP exporter spec). */
export function tracesUrl(tracesEndpoint: string | undefined, endpoint: string | undefined): string | null {
  if (tracesEndpoint) return tracesEndpoint;
  return endpoint ? `${endpoint.replace(/\/+$/, '')}/v1/traces` : null;
}

/**
 * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the SDK environment specification reads them:
 * names in any case; a sampler this service does not have, or a ratio outside 0..1, is reported (a
 * notice at start) and the default used instead (parentbased_always_on; a ratio of 1).
 */
export function tracesSampler(name: string | undefined, arg: string | undefined, notices: string[]): TracesSampler {
  const wanted = name?.trim().toLowerCase() ?? 'parentbased_always_on';
  const known = TRACES_SAMPLERS.find((sampler) => sampler === wanted);
  const sampler = known ?? 'parentbased_always_on';
  const choices = TRACES_SAMPLERS.join(', ');
  if (!known) notices.push(`OTEL_TRACES_SAMPLER=${name} is not one of ${choices}: traces are sampled by ${sampler}`);
  if (arg === undefined || !sampler.endsWith('traceidratio')) return { name: sampler, ratio: 1 };
  const ratio = Number(arg.trim());
  if (arg.trim() !== '' && ratio >= 0 && ratio <= 1) return { name: sampler, ratio };
  notices.push(`OTEL_TRACES_SAMPLER_ARG=${arg} is not a ratio from 0 to 1: traces are sampled at 1`);
  return { name: sampler, ratio: 1 };
}

/** OTEL_EXPORTER_OTLP_HEADERS (`key=value,...`, values percent-encoded), for a collector's API key. */
export const otlpHeadersEnv = z
  .string()
  .regex(/^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$/, 'must be key=value pairs, comma-separated')
  .transform(otlpHeaders);

function otlpHeaders(value: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of value.split(',')) {
    const at = pair.indexOf('=');
    const name = pair.slice(0, at).trim();
    let text = pair.slice(at + 1).trim();
    try {
      text = decodeURIComponent(text);
    } catch {
      // not percent-encoded: taken as it is
    }
    if (name) headers[name] = text;
  }
  return headers;
}

/** TOOL_MODULES: comma-separated paths, each resolved from where the service was started. */
export function toolModulePaths(value: string | undefined, cwd: string): string[] {
  return (value ?? '')
    .split(',')
    .map((path) => path.trim())
    .filter(Boolean)
    .map((path) => resolve(cwd, path));
}
