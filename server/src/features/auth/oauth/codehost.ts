import * as oidc from 'openid-client';
import { AppError } from '../../../lib/errors.ts';
import { splitName, toOAuthError, type OAuthProfile, type OAuthProvider } from './oauth-provider.ts';

export interface CodehostConfig {
  clientId: string;
  clientSecret: string;
  authorizeUrl: string;
  tokenUrl: string;
  apiUrl: string;
  redirectUri: string;
}

interface CodehostUser {
  id: number;
  login: string;
  name: string | null;
  email: string | null;
}

interface CodehostEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

/**
 * `codehost` (GitHub): plain OAuth 2.0 with static endpoints, state in a cookie and PKCE besides.
 * The user comes from its REST API; only a primary address the provider marks verified counts as
 * verified.
 */
export function createCodehostProvider(config: CodehostConfig): OAuthProvider {
  const server: oidc.ServerMetadata = {
    issuer: new URL(config.authorizeUrl).origin,
    authorization_endpoint: config.authorizeUrl,
    token_endpoint: config.tokenUrl,
  };
  const client = new oidc.Configuration(server, config.clientId, config.clientSecret);
  if (config.tokenUrl.startsWith('http:')) oidc.allowInsecureRequests(client);

  async function api<T>(accessToken: string, path: string): Promise<T> {
    const response = await fetch(`${config.apiUrl}${path}`, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json', 'user-agent': 'agent-platform' },
      signal: AbortSignal.timeout(10_000),
      redirect: 'error',
    });
    if (!response.ok) throw new AppError('upstream_unavailable', `codehost API answered ${response.status} for ${path}`);
    return (await response.json()) as T;
  }

  return {
    name: 'codehost',
    async begin() {
      const state = oidc.randomState();
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(client, {
        redirect_uri: config.redirectUri,
        scope: 'read:user user:email',
        state,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      return { url, checks: { state, verifier } };
    },

    async complete(callbackUrl, checks): Promise<OAuthProfile> {
      const tokens = await oidc
        .authorizationCodeGrant(client, callbackUrl, { expectedState: checks.state, pkceCodeVerifier: checks.verifier })
        .catch((error: unknown) => {
          throw toOAuthError(error);
        });
      const user = await api<CodehostUser>(tokens.access_token, '/user');
      const emails = await api<CodehostEmail[]>(tokens.access_token, '/user/emails').catch(() => [] as CodehostEmail[]);
      const primary = emails.find((entry) => entry.primary) ?? null;
      return {
        providerId: String(user.id),
        email: primary?.email ?? user.email,
        emailVerified: primary?.verified === true,
        username: user.login,
        ...splitName(user.name),
      };
    },
  };
}
