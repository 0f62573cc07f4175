import { AppError } from '../../../lib/errors.ts';

/** What an OAuth provider tells us about the person who signed in. */
export interface OAuthProfile {
  providerId: string;
  email: string | null;
  emailVerified: boolean;
  username: string | null;
  firstName: string | null;
  lastName: string | null;
}

export type OAuthProviderName = 'codehost' | 'idp';

/** One OAuth login: where to send the browser, and how to turn its return into a profile. */
export interface OAuthProvider {
  readonly name: OAuthProviderName;
  /** The authorization URL and the values (state, verifier, nonce) to keep in HTTP-only cookies. */
  begin(): Promise<{ url: URL; checks: Record<string, string> }>;
  /** Exchanges the code on `callbackUrl` after checking it against the kept values. */
  complete(callbackUrl: URL, checks: Record<string, string | undefined>): Promise<OAuthProfile>;
}

export function splitName(name: string | null | undefined): { firstName: string | null; lastName: string | null } {
  const parts = (name ?? '').trim().split(/\s+/).filter(Boolean);
  if (parts.length === 0) return { firstName: null, lastName: null };
  return { firstName: parts[0] ?? null, lastName: parts.slice(1).join(' ') || null };
}

/** A code or answer the provider refuses is a 400 with its reason; an unreachable provider is a 502. */
export function toOAuthError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const e = error as { code?: string; error?: string; message?: string };
  if (e.error) return new AppError('oauth_exchange_failed', `The provider refused the login: ${e.error}`);
  if (e.code?.startsWith('OAUTH_'))
    return new AppError('oauth_exchange_failed', `The provider's answer was not accepted: ${e.message}`);
  return new AppError('upstream_unavailable', 'The login provider could not be reached', { cause: error });
}
