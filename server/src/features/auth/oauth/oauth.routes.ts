import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../../../lib/errors.ts';
import type { RateLimiter } from '../../../lib/rate-limit.ts';
import { oauthCallbackQuery } from '../auth.schemas.ts';
import { requestMeta } from '../auth.routes.ts';
import { setSessionCookie } from '../session-cookie.ts';
import type { OAuthProviderName } from './oauth-provider.ts';
import type { OAuthService } from './oauth.service.ts';
import { errorSchema } from '../../../lib/http-schemas.ts';

const CHECKS_MAX_AGE_SECONDS = 10 * 60;

export interface OAuthRouteDeps {
  oauth: OAuthService;
  limits: Record<OAuthProviderName, RateLimiter>;
  redirectUris: Record<OAuthProviderName, string | undefined>;
  appHost: string;
  isProduction: boolean;
}

/** The state, verifier and nonce of one login live in HTTP-only cookies scoped to the provider's path. */
const checkCookie = (name: OAuthProviderName, key: string) => `oauth_${name}_${key}`;
const cookieOptions = (name: OAuthProviderName) => ({
  path: `/auth/${name}`,
  httpOnly: true,
  secure: true,
  sameSite: 'lax' as const,
});
const CHECK_KEYS = ['state', 'nonce', 'verifier'];

export function oauthRoutes(deps: OAuthRouteDeps): FastifyPluginAsyncZod {
  return async (app) => {
    for (const name of ['codehost', 'idp'] as const) {
      const limit = async (request: FastifyRequest) => {
        deps.oauth.assertConfigured(name);
        await deps.limits[name].consume(request.ip);
      };

      app.get(
        `/auth/${name}`,
        {
          schema: {
            operationId: `${name}Login`,
            security: [],
            tags: ['auth'],
            summary: `Start the ${name} login (redirects to the provider)`,
            response: { 404: errorSchema, 429: errorSchema },
          },
          preHandler: limit,
        },
        async (_request, reply) => {
          const { url, checks } = await deps.oauth.begin(name);
          for (const [key, value] of Object.entries(checks)) {
            reply.setCookie(checkCookie(name, key), value, { ...cookieOptions(name), maxAge: CHECKS_MAX_AGE_SECONDS });
          }
          return reply.redirect(url.href, 302);
        },
      );

      app.get(
        `/auth/${name}/callback`,
        {
          schema: {
            operationId: `${name}LoginCallback`,
            security: [],
            tags: ['auth'],
            summary: `Finish the ${name} login: session created, redirect to the app`,
            querystring: oauthCallbackQuery,
            response: { 400: errorSchema, 404: errorSchema, 409: errorSchema, 429: errorSchema, 502: errorSchema },
          },
          preHandler: limit,
        },
        async (request, reply) => {
          const checks = Object.fromEntries(CHECK_KEYS.map((key) => [key, request.cookies[checkCookie(name, key)]]));
          clearChecks(reply, name);
          if (request.query.error) {
            throw new AppError('oauth_exchange_failed', `The provider refused the login: ${request.query.error}`);
          }
          // The callback URL as the provider sent it: our registered redirect URI with its query.
          const callbackUrl = new URL(deps.redirectUris[name]!);
          callbackUrl.search = new URL(request.url, 'http://placeholder').search;
          const { token } = await deps.oauth.complete(name, callbackUrl, checks, requestMeta(request));
          setSessionCookie(reply, token, deps.isProduction);
          return reply.redirect(deps.appHost, 302);
        },
      );
    }
  };
}

function clearChecks(reply: FastifyReply, name: OAuthProviderName): void {
  for (const key of CHECK_KEYS) reply.setCookie(checkCookie(name, key), '', { ...cookieOptions(name), maxAge: 0 });
}
