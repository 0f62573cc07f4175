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
