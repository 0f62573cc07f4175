import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { randomToken } from './crypto.ts';

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

/** The OTLP/HTTP traces URL: the signal's own endpoint as given, or the base endpoint's /v1/traces (the OTLP exporter spec). */
export function tracesUrl(tracesEndpoint: string | undefined, endpoint: string | undefined): string | null {
  if (tracesEndpoint) return tracesEndpoint;
  return endpoint ? `${endpoint.replace(/\/+$/, '')}/v1/traces` : null;
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
