import type { JobHandler } from '../../jobs/registry.ts';
import type { PasswordResetService } from './password-reset.service.ts';

export function authJobHandlers(deps: { passwordReset: PasswordResetService }): { 'auth.password-reset': JobHandler<'auth.password-reset'> } {
  return {
    'auth.password-reset': (payload) => deps.passwordReset.sendResetLink(payload),
  };
}
