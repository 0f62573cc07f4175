import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

/** Where `npm run build -w console` writes the console (console/scripts/build.ts). */
export const CONSOLE_DIST = join(import.meta.dirname, '../../console/dist');

/** Paths of the API: never answered with the console's page, whatever the Accept header. */
const API_PREFIXES = [
  '/auth',
  '/orgs',
  '/api',
  '/webhooks',
  '/docs',
  '/openapi.json',
  '/healthz',
  '/readyz',
  '/metrics',
  '/assets',
];
const NONCE_PLACEHOLDER = '__CSP_NONCE__';

/**
 * Scripts only from our origin, no inline script; styles from our origin plus the <style> elements
 * the component kit adds, which carry this page's nonce; nothing framed from elsewhere, no plugins.
 */
const pagePolicy = (nonce: string) =>
  [
    "default-src 'self'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "frame-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');

/**
 * The built console, served at APP_HOST when that is this service's own origin: hashed assets with
 * a year's cache (precompressed copies when the browser takes them), and for every other page-like
 * GET the console's one page, with a fresh CSP nonce each time (client routes: history fallback).
 */
export function createConsoleSite(distDir = CONSOLE_DIST) {
  const indexFile = join(distDir, 'index.html');
  if (!existsSync(indexFile)) return undefined;
  let template = readFileSync(indexFile, 'utf8');
  /**
   * The page as built now, read at each page load (a small file; pages are few beside API calls): a
   * build while the server runs replaces the hashed assets the page names, and a page kept from
   * before would load none of them. While a build has it missing, the last one read.
   */
  const currentTemplate = () => {
    try {
      template = readFileSync(indexFile, 'utf8');
    } catch {
      // being rebuilt: the next page load reads it
    }
    return template;
  };

  const assets: FastifyPluginAsync = async (app) => {
    await app.register(fastifyStatic, {
      root: join(distDir, 'assets'),
      prefix: '/assets/',
      preCompressed: true,
      immutable: true,
      maxAge: '365d',
      index: false,
      decorateReply: false,
    });
  };

  return {
    assets,
    /** Whether `request` asks for a page of the console (a browser navigation outside the API). */
    wantsPage(request: FastifyRequest): boolean {
      if (request.method !== 'GET' && request.method !== 'HEAD') return false;
      const path = request.url.split('?')[0] ?? '/';
      if (API_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) return false;
      return (request.headers.accept ?? '').includes('text/html');
    },
    sendPage(reply: FastifyReply) {
      const nonce = randomBytes(16).toString('base64');
      return reply
        .header('content-security-policy', pagePolicy(nonce))
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(currentTemplate().replaceAll(NONCE_PLACEHOLDER, nonce));
    },
  };
}

export type ConsoleSite = NonNullable<ReturnType<typeof createConsoleSite>>;

/** What a plain GET / (not a browser's) is answered: where a person goes next. */
export function serviceIndex(config: { apiHost: string; appHost: string }, consoleServed: boolean) {
  const consoleUrl = consoleServed ? `${config.appHost}/` : config.appHost === config.apiHost ? null : config.appHost;
  return {
    service: 'Agent Platform',
    message: consoleUrl
      ? `This is the API. Open ${consoleUrl} in a browser for the console; the API's reference is at ${config.apiHost}/docs.`
      : `This is the API; the console is not built (npm run build -w console). The API's reference is at ${config.apiHost}/docs.`,
    console: consoleUrl,
    docs: `${config.apiHost}/docs`,
    openapi: `${config.apiHost}/openapi.json`,
    health: `${config.apiHost}/healthz`,
  };
}
