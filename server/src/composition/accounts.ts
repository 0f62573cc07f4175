import { createAuthService } from '../features/auth/auth.service.ts';
import { createExternalAuthService } from '../features/auth/external/external-auth.service.ts';
import { createJwtAuthProvider } from '../features/auth/external/jwt-provider.ts';
import { createExternalAuthRegistry } from '../features/auth/external/registry.ts';
import { createUserLimitsService } from '../features/auth/external/user-limits.service.ts';
import { createSessionMiddlewares } from '../features/auth/middlewares.ts';
import { createCodehostProvider } from '../features/auth/oauth/codehost.ts';
import { createIdpProvider } from '../features/auth/oauth/idp.ts';
import { createOAuthService } from '../features/auth/oauth/oauth.service.ts';
import { createPasswordResetService } from '../features/auth/password-reset.service.ts';
import { createSessionsService } from '../features/auth/sessions.service.ts';
import { createOrgAccess } from '../features/orgs/org-access.ts';
import { createOrgsService } from '../features/orgs/orgs.service.ts';
import { createThreadsService } from '../features/threads/threads.service.ts';
import { createUsersService } from '../features/users/users.service.ts';
import { createPasswordHasher } from '../lib/passwords.ts';
import type { RateLimiters } from '../lib/rate-limit.ts';
import { createSystemMailer } from '../lib/system-mailer.ts';
import type { Shared } from './shared.ts';

/** Users, sessions, sign-in of every kind, organizations and who may reach them. */
export function composeAccounts({ config, db, clock, logger, box, bus, jobs }: Shared, rateLimiters: RateLimiters) {
  const passwords = createPasswordHasher(config.passwordHashCost);
  const mailer = createSystemMailer({ ...config.mail, logBodies: !config.isProduction }, logger);
  const authPerMinute = { points: config.rateLimit.authPerMinute, durationSeconds: 60 };
  const limits = {
    login: rateLimiters.create({ name: 'auth-login', ...authPerMinute }),
    codehost: rateLimiters.create({ name: 'auth-codehost', ...authPerMinute }),
    idp: rateLimiters.create({ name: 'auth-idp', ...authPerMinute }),
    external: rateLimiters.create({ name: 'auth-external', ...authPerMinute }),
    forgotPasswordByIp: rateLimiters.create({ name: 'auth-forgot-ip', ...authPerMinute }),
    forgotPasswordByEmail: rateLimiters.create({ name: 'auth-forgot-email', points: 5, durationSeconds: 60 * 60 }),
  };
  const externalAuthRegistry = createExternalAuthRegistry();
  if (config.externalAuth.jwt) externalAuthRegistry.registerExternalAuthProvider(createJwtAuthProvider(config.externalAuth.jwt));

  const users = createUsersService({ db, passwords });
  const sessions = createSessionsService({ db, clock, bus, cacheTtlMs: config.sessionCacheTtlMs });
  const services = {
    users,
    sessions,
    auth: createAuthService({ db, passwords, sessions }),
    passwordReset: createPasswordResetService({ db, clock, jobs, mailer, passwords, sessions, appHost: config.appHost, logger }),
    oauth: createOAuthService({
      db,
      users,
      sessions,
      providers: {
        ...(config.codehost ? { codehost: createCodehostProvider(config.codehost) } : {}),
        ...(config.idp ? { idp: createIdpProvider(config.idp) } : {}),
      },
    }),
    externalAuth: createExternalAuthService({
      db,
      registry: externalAuthRegistry,
      users,
      sessions,
      box,
      defaultProvider: config.externalAuth.defaultProvider,
    }),
    userLimits: createUserLimitsService({ db, registry: externalAuthRegistry, box, clock, logger, ...config.userLimits }),
    orgs: createOrgsService({ db }),
    threads: createThreadsService({ db }),
  };
  const trustedOrigins: ReadonlySet<string> = new Set([config.appHost, config.apiHost]);
  const middlewares = createSessionMiddlewares({ sessions, trustedOrigins });
  const orgAccess = createOrgAccess({ middlewares, orgs: services.orgs });
  return { services, mailer, limits, externalAuthRegistry, trustedOrigins, middlewares, orgAccess };
}
