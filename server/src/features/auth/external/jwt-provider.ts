import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { ExternalAuthProvider } from './registry.ts';

export interface JwtProviderConfig {
  name: string;
  issuer?: string;
  jwksUrl: string;
  audience?: string;
  claims: { userId: string; email: string; firstName: string; lastName: string; isAdmin?: string };
}

/**
 * A provider usable without code: tokens are JWTs signed by keys published at a JWKS URL, with
 * issuer and audience checked when configured, and claim names taken from configuration.
 */
export function createJwtAuthProvider(config: JwtProviderConfig): ExternalAuthProvider {
  const keys = createRemoteJWKSet(new URL(config.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 });
  const claim = (payload: JWTPayload, name: string | undefined) => {
    const value = name ? payload[name] : undefined;
    return typeof value === 'string' && value.length > 0 ? value : undefined;
  };
  return {
    name: config.name,
    async validateToken(authToken) {
      try {
        const { payload } = await jwtVerify(authToken, keys, {
          issuer: config.issuer,
          audience: config.audience,
          clockTolerance: 5,
        });
        const externalUserId = claim(payload, config.claims.userId);
        const email = claim(payload, config.claims.email);
        if (!externalUserId || !email) {
          return {
            isValid: false,
            error: `The token lacks the ${externalUserId ? config.claims.email : config.claims.userId} claim`,
          };
        }
        const adminClaim = config.claims.isAdmin ? payload[config.claims.isAdmin] : undefined;
        return {
          isValid: true,
          userData: {
            externalUserId,
            email,
            firstName: claim(payload, config.claims.firstName),
            lastName: claim(payload, config.claims.lastName),
            isAdmin: adminClaim === undefined ? undefined : adminClaim === true || adminClaim === 'true',
          },
        };
      } catch (error) {
        if (error instanceof errors.JOSEError) return { isValid: false, error: `Invalid token: ${error.code}` };
        return { isValid: false, error: 'The token could not be verified' };
      }
    },
  };
}
