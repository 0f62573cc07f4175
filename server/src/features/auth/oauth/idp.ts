import * as oidc from 'openid-client';
import { AppError } from '../../../lib/errors.ts';
import { toOAuthError, type OAuthProfile, type OAuthProvider } from './oauth-provider.ts';

export interface IdpConfig {
  clientId: string;
  clientSecret: string;
  issuer: string;
  scopes: string;
  redirectUri: string;
}

/**
 * `idp`: any OpenID provider, found by discovery from its issuer, with state, PKCE and nonce. The
 * user comes from the userinfo endpoint, checked against the ID token's subject.
 */
export function createIdpProvider(config: IdpConfig): OAuthProvider {
  let client: Promise<oidc.Configuration> | undefined;
  const getClient = () =>
    (client ??= oidc
      .discovery(new URL(config.issuer), config.clientId, config.clientSecret, undefined, {
        execute: config.issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [],
        timeout: 10,
      })
      .catch((error: unknown) => {
        client = undefined; // try discovery again on the next login
        throw new AppError('upstream_unavailable', 'The OpenID provider could not be discovered', { cause: error });
      }));

  return {
    name: 'idp',
    async begin() {
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(await getClient(), {
        redirect_uri: config.redirectUri,
        scope: config.scopes,
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      return { url, checks: { state, nonce, verifier } };
    },

    async complete(callbackUrl, checks): Promise<OAuthProfile> {
      const oidcClient = await getClient();
      try {
        const tokens = await oidc.authorizationCodeGrant(oidcClient, callbackUrl, {
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          pkceCodeVerifier: checks.verifier,
          idTokenExpected: true,
        });
        const subject = tokens.claims()?.sub;
        if (!subject) throw new AppError('oauth_exchange_failed', 'The provider returned no subject');
        const info = await oidc.fetchUserInfo(oidcClient, tokens.access_token, subject);
        const str = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : null);
        return {
          providerId: subject,
          email: str(info.email),
          emailVerified: info.email_verified === true,
          username: str(info.preferred_username),
          firstName: str(info.given_name),
          lastName: str(info.family_name),
        };
      } catch (error) {
        throw toOAuthError(error);
      }
    },
  };
}
