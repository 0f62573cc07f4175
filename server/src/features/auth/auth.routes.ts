import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RateLimiter } from '../../lib/rate-limit.ts';
import { toPublicUser, userSchema } from '../users/users.schemas.ts';
import type { AuthService, RequestMeta } from './auth.service.ts';
import {
  credentialsLoginBody,
  externalAuthBody,
  externalAuthResponse,
  forgotPasswordBody,
  resetPasswordBody,
  successSchema,
} from './auth.schemas.ts';
import type { UserLimitsService } from './external/user-limits.service.ts';
import type { ExternalAuthService } from './external/external-auth.service.ts';
import type { SessionMiddlewares } from './middlewares.ts';
import type { PasswordResetService } from './password-reset.service.ts';
import { clearSessionCookie, setSessionCookie } from './session-cookie.ts';
import type { FastifyRequest } from 'fastify';
import type { OAuthService } from './oauth/oauth.service.ts';
import { errorSchema, sessionSecurity } from '../../lib/http-schemas.ts';
import { userOf } from '../../lib/request-context.ts';

export interface AuthRouteDeps {
  auth: AuthService;
  oauth: Pick<OAuthService, 'configured'>;
  passwordReset: PasswordResetService;
  externalAuth: ExternalAuthService;
  userLimits: Pick<UserLimitsService, 'status'>;
  middlewares: SessionMiddlewares;
  limits: { login: RateLimiter; forgotPasswordByIp: RateLimiter; forgotPasswordByEmail: RateLimiter; external: RateLimiter };
  isProduction: boolean;
}

export const requestMeta = (request: FastifyRequest): RequestMeta => ({
  ipAddress: request.ip,
  userAgent: request.headers['user-agent'],
});

const meSchema = userSchema.extend({
  limits: z
    .object({
      maxMessages: z.int().nullable(),
      resetDate: z.date().nullable(),
      usedMessages: z.int().describe('Model messages used by actions run as this user since the last reset'),
    })
    .nullable(),
  preferences: z.object({
    approvalEmails: z.boolean().describe('Whether approval emails are sent to this user (rules that notify by email)'),
  }),
});

const preferencesBody = z
  .object({ approvalEmails: z.boolean().optional().describe('false: no approval emails to me; I decide in the console') })
  .strict();

const errors = { 400: errorSchema, 401: errorSchema, 403: errorSchema, 429: errorSchema };

export function authRoutes(deps: AuthRouteDeps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/auth/login/credentials',
      {
        schema: {
          operationId: 'loginWithCredentials',
          security: [],
          tags: ['auth'],
          summary: 'Log in with email and password',
          body: credentialsLoginBody,
          response: { 200: userSchema, ...errors },
        },
        preHandler: async (request) => deps.limits.login.consume(request.ip),
      },
      async (request, reply) => {
        const { user, token } = await deps.auth.loginWithCredentials(
          request.body.email,
          request.body.password,
          requestMeta(request),
        );
        setSessionCookie(reply, token, deps.isProduction);
        return toPublicUser(user);
      },
    );

    app.get(
      '/auth/methods',
      {
        schema: {
          operationId: 'getLoginMethods',
          tags: ['auth'],
          summary: 'The ways to sign in that this server offers (a sign-in page shows them)',
          security: [],
          response: {
            200: z.object({
              credentials: z.literal(true),
              oauth: z.array(z.enum(['codehost', 'idp'])).describe('GET /auth/{name} starts each'),
              external: z.array(z.string()).describe('providerName values of POST /auth/external'),
            }),
          },
        },
      },
      async () => ({ credentials: true as const, oauth: deps.oauth.configured(), external: deps.externalAuth.providerNames() }),
    );

    app.get(
      '/auth/me',
      {
        schema: {
          operationId: 'getMe',
          tags: ['auth'],
          summary: 'The signed-in user, with the limits their external auth provider sets (null: none)',
          security: sessionSecurity,
          response: { 200: meSchema, ...errors },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request) => ({
        ...toPublicUser(userOf(request)),
        limits: await deps.userLimits.status(userOf(request).id),
        preferences: { approvalEmails: userOf(request).approvalEmails },
      }),
    );

    app.patch(
      '/auth/me/preferences',
      {
        schema: {
          operationId: 'updateMyPreferences',
          tags: ['auth'],
          summary: "Change the signed-in user's own preferences (approval emails)",
          security: sessionSecurity,
          body: preferencesBody,
          response: { 200: meSchema.shape.preferences, ...errors },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request) => deps.auth.setPreferences(userOf(request).id, request.body),
    );

    app.post(
      '/auth/logout',
      {
        schema: {
          operationId: 'logout',
          tags: ['auth'],
          summary: 'End the current session',
          security: sessionSecurity,
          response: { 200: successSchema, ...errors },
        },
        preHandler: deps.middlewares.flexibleSessionMiddleware('Guest'),
      },
      async (request, reply) => {
        await deps.auth.logout(request.sessionToken!);
        clearSessionCookie(reply, deps.isProduction);
        return { success: true as const };
      },
    );

    app.post(
      '/auth/forgot-password',
      {
        schema: {
          operationId: 'forgotPassword',
          security: [],
          tags: ['auth'],
          summary: 'Mail a password reset link',
          description: 'Answers the same whether or not an account exists for the email.',
          body: forgotPasswordBody,
          response: { 200: successSchema, ...errors },
        },
        preHandler: async (request) => {
          await deps.limits.forgotPasswordByIp.consume(request.ip);
          await deps.limits.forgotPasswordByEmail.consume((request.body as { email: string }).email.toLowerCase());
        },
      },
      async (request) => {
        await deps.passwordReset.requestReset(request.body.email);
        return { success: true as const, message: 'If an account exists for that email, a reset link is on its way.' };
      },
    );

    app.post(
      '/auth/reset-password',
      {
        schema: {
          operationId: 'resetPassword',
          security: [],
          tags: ['auth'],
          summary: 'Set a new password with a reset token',
          body: resetPasswordBody,
          response: { 200: successSchema, ...errors },
        },
        preHandler: async (request) => deps.limits.forgotPasswordByIp.consume(request.ip),
      },
      async (request) => {
        await deps.passwordReset.resetPassword(request.body.token, request.body.newPassword);
        return { success: true as const, message: 'Password updated. Log in with the new password.' };
      },
    );

    app.post(
      '/auth/external',
      {
        schema: {
          operationId: 'loginWithExternalToken',
          security: [],
          tags: ['auth'],
          summary: 'Log in with a token of an external auth provider',
          body: externalAuthBody,
          response: { 200: externalAuthResponse, ...errors },
        },
        preHandler: async (request) => deps.limits.external.consume(request.ip),
      },
      async (request, reply) => {
        const { user, token, expiresAt } = await deps.externalAuth.authenticate(
          request.body.authToken,
          request.body.providerName,
          requestMeta(request),
        );
        setSessionCookie(reply, token, deps.isProduction);
        return { user: toPublicUser(user), sessionToken: token, expiresAt: expiresAt.toISOString() };
      },
    );
  };
}
