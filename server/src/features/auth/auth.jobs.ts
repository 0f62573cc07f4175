import type { JobHandler } from '../../jobs/registry.ts';
import type { PasswordResetService } from './password-reset.service.ts';
import type { SessionsService } from './sessions.service.ts';

export function authJobHandlers(deps: { passwordReset: PasswordResetService; sessions: SessionsService }): {
  'auth.password-reset': JobHandler<'auth.password-reset'>;
  'auth.purge-expired': JobHandler<'auth.purge-expired'>;
} {
  return {
    'auth.password-reset': (payload) => deps.passwordReset.sendResetLink(payload),
    'auth.purge-expired': async () => {
      await deps.sessions.deleteExpired();
      await deps.passwordReset.deleteStaleTokens();
    },
  };
}
