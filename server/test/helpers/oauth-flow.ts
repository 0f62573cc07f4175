import { setCookies } from './http.ts';
import type { TestApp } from './test-app.ts';

/**
 * Drives a browser's OAuth round trip: our start route, the provider's authorize redirect, and our
 * callback with the cookies the start route set. Returns the callback's response.
 */
export async function runOAuthLogin(
  app: TestApp,
  provider: 'codehost' | 'idp',
  tamper: { state?: string; dropCookies?: boolean } = {},
) {
  const start = await app.request('GET', `/auth/${provider}`);
  if (start.status !== 302) return { start, callback: undefined };
  const cookies = setCookies(start);
  const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callbackUrl = new URL(authorize.headers.get('location')!);
  if (tamper.state !== undefined) callbackUrl.searchParams.set('state', tamper.state);
  const cookieHeader = tamper.dropCookies ? '' : [...cookies].map(([name, cookie]) => `${name}=${cookie.value}`).join('; ');
  const callback = await app.request('GET', `${callbackUrl.pathname}${callbackUrl.search}`, {
    headers: cookieHeader ? { cookie: cookieHeader } : {},
  });
  return { start, callback, cookies };
}
